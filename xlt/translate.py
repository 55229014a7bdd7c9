"""`python -m xlt.translate +recipe=<name> [overrides]`: translate the training set."""

from xlt.cli import make_main

main = make_main(['translate'])

if __name__ == "__main__":
    main()
