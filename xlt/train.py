"""`python -m xlt.train +recipe=<name> [overrides]`: every stage the recipe lists (stages=[...])."""

from xlt.cli import make_main

main = make_main(None)

if __name__ == "__main__":
    main()
