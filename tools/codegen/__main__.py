"""``python -m tools.codegen`` regenerates ember/_generated; ``--check`` fails when it is stale."""
import sys

from tools.codegen.gen import OUT_DIR, check, generate, write


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--check" in argv:
        stale = check()
        if stale:
            print(f"ember/_generated is stale ({', '.join(stale)}): run `python -m tools.codegen`")
            return 1
        print("ember/_generated is up to date")
        return 0
    write(generate())
    print(f"wrote {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
