#!/usr/bin/env python3
"""Turn mutations.tsv into patches/<id>.patch, one deliberate bug each.

Run from the repository root on a clean tree: for each row it replaces
the one occurrence of old by new in file, takes `git diff` as the patch
and restores the file. A row whose old does not occur exactly once is
an error (the code moved: fix the row).
"""
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


def unescape(s):
    return s.replace("\\n", "\n").replace("\\t", "\t")


def main():
    out = HERE / "patches"
    out.mkdir(exist_ok=True)
    for old in out.glob("*.patch"):
        old.unlink()
    bad = 0
    for line in (HERE / "mutations.tsv").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        mid, _pkg, path, old, new, _what = line.split("\t")
        old, new = unescape(old), unescape(new)
        p = pathlib.Path(path)
        text = p.read_text()
        n = text.count(old)
        if n != 1:
            print(f"{mid}: {path}: old occurs {n} times", file=sys.stderr)
            bad += 1
            continue
        p.write_text(text.replace(old, new))
        try:
            diff = subprocess.run(["git", "diff", "--", path], check=True, capture_output=True, text=True).stdout
        finally:
            p.write_text(text)
        (out / f"{mid}.patch").write_text(diff)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
