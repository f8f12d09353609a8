#!/usr/bin/env python3
"""Drives the same operations on the official filesystem server (npm
`@modelcontextprotocol/server-filesystem`) and on `mcp serve filesystem`,
each on a copy of one fixture tree, through `mcp call`, and compares what
they answer and what they leave on disk. Where the two are documented to
differ (we sort listings; dates are formatted differently) the comparison
says so and compares what both promise.

Usage: filesystem-parity.py MCP OFFICIAL_COMMAND
(OFFICIAL_COMMAND runs the official server; the directory is appended.)
Prints one line per operation; exits 1 at the first difference."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

MCP, OFFICIAL = sys.argv[1], sys.argv[2]

FIXTURE = {
    "a.txt": "alpha\nbeta\ngamma\ndelta\n",
    "data.json": '{"k": 1}\n',
    "e.txt": "one\ntwo\nthree",
    "notes/b.md": "# B\nline two\n",
    "notes/deep/c.txt": "c text\n",
    "notes/deep/d.txt": "d text\n",
}


def make_tree(root):
    for path, text in FIXTURE.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


def tree_of(root):
    """Every file under root with its text, and every directory."""
    seen = {}
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        seen[rel + "/"] = None
        for name in files:
            with open(os.path.join(folder, name)) as f:
                seen[os.path.normpath(os.path.join(rel, name))] = f.read()
    return seen


base = tempfile.mkdtemp(prefix="fs-parity-")
roots = {"official": os.path.join(base, "official"), "ours": os.path.join(base, "ours")}
for root in roots.values():
    os.makedirs(root)
    make_tree(root)
servers = {
    "official": f"{OFFICIAL} {roots['official']}",
    "ours": f"{MCP} serve filesystem --write {roots['ours']}",
}


def call(who, tool, arguments):
    """The text of `tool`'s result on server `who`, its paths as ROOT/..."""
    args = {k: (v.replace("ROOT", roots[who]) if isinstance(v, str) else v)
            for k, v in arguments.items()}
    if "paths" in args:
        args["paths"] = [p.replace("ROOT", roots[who]) for p in args["paths"]]
    done = subprocess.run(
        [MCP, "call", "-s", servers[who], "--timeout", "30", "tools/call", tool, json.dumps(args)],
        capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        fail(f"{tool} on {who}: no JSON result (exit {done.returncode}): {done.stdout}{done.stderr}")
    text = "\n".join(block.get("text", "") for block in result.get("content", []))
    return bool(result.get("isError")), text.replace(roots[who], "ROOT")


def fail(why):
    print(f"FAILED: filesystem parity: {why}", file=sys.stderr)
    sys.exit(1)


checked = 0


def same(what, tool, arguments, normal=lambda text: text, note=""):
    global checked
    official = call("official", tool, arguments)
    ours = call("ours", tool, arguments)
    if official[0] != ours[0]:
        fail(f"{what}: official isError={official[0]} ({official[1]!r}), ours isError={ours[0]} ({ours[1]!r})")
    if normal(official[1]) != normal(ours[1]):
        fail(f"{what}:\n--- official:\n{official[1]}\n--- ours:\n{ours[1]}")
    checked += 1
    print(f"ok: filesystem parity: {what}{note}")


def lines(text):
    return sorted(line for line in text.splitlines() if line.strip())


def tree_json(text):
    def norm(node):
        if isinstance(node, list):
            return sorted((norm(n) for n in node), key=lambda n: json.dumps(n, sort_keys=True))
        if isinstance(node, dict):
            return {k: norm(v) for k, v in node.items()}
        return node
    return norm(json.loads(text))


def file_info(text):
    keep = ("size:", "isDirectory:", "isFile:", "permissions:")
    return sorted(l for l in text.splitlines() if l.startswith(keep))


def diff_lines(text):
    body = [l for l in text.splitlines() if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    return body


same("read_text_file", "read_text_file", {"path": "ROOT/a.txt"})
same("read_text_file head", "read_text_file", {"path": "ROOT/a.txt", "head": 2},
     lambda text: text.rstrip("\n"), " (a last line break aside: ours keeps the file's)")
# The official tail counts the empty string after a file's last line
# break as a line (tail 1 of "a\nb\n" is ""); ours does not. Compared on
# a file without a last line break, where the two agree.
same("read_text_file tail", "read_text_file", {"path": "ROOT/e.txt", "tail": 2})
same("read_text_file of a missing file fails", "read_text_file", {"path": "ROOT/missing.txt"},
     normal=lambda text: "")
same("read_text_file outside the directory fails", "read_text_file", {"path": "/etc/hostname"},
     normal=lambda text: "")
same("read_multiple_files", "read_multiple_files", {"paths": ["ROOT/a.txt", "ROOT/notes/b.md"]})
same("list_directory", "list_directory", {"path": "ROOT"}, lines, " (order aside: ours is sorted)")
same("list_directory_with_sizes", "list_directory_with_sizes", {"path": "ROOT"}, lines,
     " (order aside)")
same("directory_tree", "directory_tree", {"path": "ROOT"}, tree_json, " (order aside)")
same("search_files", "search_files", {"path": "ROOT", "pattern": "**/*.txt"}, lines, " (order aside)")
same("get_file_info", "get_file_info", {"path": "ROOT/a.txt"}, file_info,
     " (size, type and permissions; dates are formatted differently)")
same("list_allowed_directories", "list_allowed_directories", {})
same("edit_file dryRun", "edit_file",
     {"path": "ROOT/a.txt", "edits": [{"oldText": "beta", "newText": "BETA"}], "dryRun": True},
     diff_lines, " (the changed lines of the diff)")
same("edit_file", "edit_file",
     {"path": "ROOT/a.txt", "edits": [{"oldText": "gamma\ndelta", "newText": "G\nD"}]},
     diff_lines, " (the changed lines of the diff)")
same("edit_file with no match fails", "edit_file",
     {"path": "ROOT/a.txt", "edits": [{"oldText": "not there", "newText": "x"}]},
     normal=lambda text: "")
same("write_file", "write_file", {"path": "ROOT/new.txt", "content": "written\n"},
     normal=lambda text: "")
same("create_directory", "create_directory", {"path": "ROOT/made/inner"}, normal=lambda text: "")
same("move_file", "move_file", {"source": "ROOT/notes/b.md", "destination": "ROOT/made/b.md"},
     normal=lambda text: "")

if tree_of(roots["official"]) != tree_of(roots["ours"]):
    fail(f"the trees differ after the same writes:\n{tree_of(roots['official'])}\n{tree_of(roots['ours'])}")
print("ok: filesystem parity: both trees are the same after the same writes")
shutil.rmtree(base, ignore_errors=True)
print(f"filesystem parity: {checked + 1} checks passed")
