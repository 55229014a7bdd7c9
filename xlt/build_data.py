"""`python -m xlt.build_data +recipe=<name> [overrides]`: build the English training set."""

from xlt.cli import make_main

main = make_main(['build_data'])

if __name__ == "__main__":
    main()
