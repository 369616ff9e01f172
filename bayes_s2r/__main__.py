"""`python -m bayes_s2r`: the `bayes-s2r` command line, for a shell without the script on PATH."""

from bayes_s2r.cli import main

if __name__ == "__main__":
    main()
