"""`python -m xlt.evaluate +recipe=<name> [overrides]`: evaluate only."""

from xlt.cli import make_main

main = make_main(['evaluate'])

if __name__ == "__main__":
    main()
