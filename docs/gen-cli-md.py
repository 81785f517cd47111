#!/usr/bin/env python3
"""Regenerates docs/cli.md from docs/cli.md.in and the help of the built `hearth` binary.
Usage: python3 docs/gen-cli-md.py PATH/TO/hearth"""
import re, subprocess, sys, pathlib
here = pathlib.Path(__file__).parent
binary = sys.argv[1]
def block(args):
    out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, check=True).stdout
    prefix = "".join(a + " " for a in args)
    return f"```text\n$ hearth {prefix}--help\n{out}```"
text = (here / "cli.md.in").read_text()
text = re.sub(r"@@HELP ?([^@]*)@@", lambda m: block(m.group(1).split()), text)
(here / "cli.md").write_text(text)
