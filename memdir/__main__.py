"""`python -m memdir`: the same command as `memdir`."""

from memdir.cli.main import run

if __name__ == "__main__":
    run()
