"""``python -m dlbridge doctor [--json]``: see ``dlbridge._doctor``."""

import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "doctor":
        print("usage: python -m dlbridge doctor [--json] [--peer NAME] [--timeout S] [--jobs N] [--quiet]\n\n"
              "doctor: find the installed DLPack libraries and try exchanging tensors with each",
              file=sys.stderr)
        return 2
    from ._doctor import main as doctor

    return doctor(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
