"""`python -m memdir`: the same command as `memdir`."""

from memdir.cli.launch import run

if __name__ == "__main__":
    run()
