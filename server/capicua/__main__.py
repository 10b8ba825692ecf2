"""``python -m capicua``: the same as the ``capicua`` command."""

from capicua.entry import main

if __name__ == "__main__":
    main()
