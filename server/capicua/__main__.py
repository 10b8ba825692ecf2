"""``python -m capicua``: the same as the ``capicua`` command."""

if __name__ == "__main__":
    # The entry point's own import under the guard it keeps (capicua.entry): a Ctrl-C
    # while it loads ends the command with the same one line and 130, not a traceback.
    try:
        from capicua.entry import main
    except KeyboardInterrupt as e:
        from capicua.common import interrupt

        interrupt.exit_interrupted(e)
    main()
