"""`python -m xlt.finetune +recipe=<name> [overrides]`: fine-tune only."""

from xlt.cli import make_main

main = make_main(['train'])

if __name__ == "__main__":
    main()
