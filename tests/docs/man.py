#!/usr/bin/env python3
"""The man pages against the programs (test man-options) and against man(1)
(test man-render).

man-options: every option a program's --help lists is an entry of its page
(a line of the page's source that starts with the option in bold), and every
option an entry names is in --help; for framefs the -o mount options and the
fstab words it ignores, for framefs-admin its commands as well; the presets
table of framefs-frametest(1) is the one `framefs-frametest --list` prints.
What --help lists is read as tests/docs/options.py reads it (options-in-help
proves --help against the C source).

man-render: `man --warnings -l` renders every built page (MAN_PAGES, paths
separated by ':') with nothing on its standard error.

Exit 0 when everything agrees, 1 with a line per disagreement.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import options  # noqa: E402  (help_text, switches_in: the same reading of --help)

SRC = options.SRC
problem = options.problem


def page(name):
    with open(os.path.join(SRC, "docs", "man", name + ".scd"), encoding="utf-8") as f:
        return f.read()


def sections(text):
    """{SECTION TITLE: its lines}"""
    out, cur = {}, None
    for line in text.split("\n"):
        m = re.match(r"# (.+)$", line)
        if m:
            cur = m.group(1)
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


def plain(line):
    """A line of scdoc without its markup: *bold*, _underline_, \\ escapes."""
    return re.sub(r"\\(.)", r"\1", re.sub(r"(?<![\w\\])_|_(?!\w)|\*", "", line))


def entries(text, titles, raw=False):
    """The entry lines (not indented, starting with bold) of these sections,
    without their markup unless raw."""
    secs = sections(text)
    out = []
    for t in titles:
        if t not in secs:
            problem(f"the page has no section {t}: the test must learn its new form")
            continue
        out += [l if raw else plain(l) for l in secs[t] if l.startswith("*")]
    return out


def compare(prog, in_help, in_page, what="option"):
    options.compare(prog, in_help, in_page, what, "--help lists {}, its page has no entry for it",
                    "its page has an entry for {}, --help does not list it")


def daemon():
    text, h = page("framefs.8"), options.help_text("FRAMEFS")
    page_o = set()
    page_sw = set()
    for l in entries(text, ["OPTIONS", "MOUNT OPTIONS"], raw=True):
        # a mount option is in bold with its -o (*-o ro*); _option_ is a placeholder
        page_o |= set(re.findall(r"\*-o ([a-z_]\w*)", l))
        page_sw |= set(re.findall(r"(?<![\w./-])(--?[A-Za-z][\w-]*)", plain(l)))
    compare("framefs", set(re.findall(r"(?<![\w-])-o ([a-z_]\w*)", h)), page_o, "-o")
    compare("framefs", options.switches_in(h), page_sw)
    # the fstab words --help says are ignored: named in the page too
    m = re.search(r"fstab's words in -o \(([^)]*)\)", h)
    if not m:
        problem("framefs --help: no list of ignored fstab words: the test must learn its new form")
        return
    body = plain(text)
    for w in re.split(r",\s*", m.group(1)):
        if not re.search(r"(?<![\w-])" + re.escape(w.rstrip("*")), body):
            problem(f"framefs: --help says -o {w} is ignored, its page does not")


def getopt_page(prog, env, name, titles=("OPTIONS",)):
    h = options.help_text(env)
    in_page = set()
    for l in entries(page(name), titles):
        in_page |= set(re.findall(r"(?<![\w./-])(--?[A-Za-z][\w-]*)", l))
    compare(prog, options.switches_in(h), in_page)


def admin():
    text, h = page("framefs-admin.8"), options.help_text("ADMIN")
    getopt_page("framefs-admin", "ADMIN", "framefs-admin.8", ("OPTIONS",))
    helped = set(re.findall(r"^  ([a-z][\w-]*) ", h, re.M))
    in_page = {l.split()[0] for l in entries(text, ["COMMANDS"])}
    compare("framefs-admin", helped, in_page, "command")
    # each command's own options, as --help gives them on its line, are on its entry
    for line in h.split("\n"):
        m = re.match(r"  ([a-z][\w-]*) (.*?)\s{2,}", line)
        if not m:
            continue
        cmd, opts = m.group(1), set(re.findall(r"--[\w-]+", m.group(2)))
        mine = set()
        for l in entries(text, ["COMMANDS"]):
            if l.split()[0] == cmd:
                mine |= set(re.findall(r"--[\w-]+", l))
        for o in sorted(opts - mine):
            problem(f"framefs-admin: --help gives {cmd} {o}, the page's {cmd} entries do not")


def frametest():
    getopt_page("framefs-frametest", "FRAMETEST", "framefs-frametest.1")
    exe = os.environ["FRAMETEST"]
    out = subprocess.run([exe, "--list"], capture_output=True, text=True, timeout=30).stdout
    listed = {}
    for line in out.split("\n")[2:]:
        if not line.strip():
            break
        f = line.split()
        listed[f[0]] = (f[1], f[2])
    rows = [l for l in sections(page("framefs-frametest.1")).get("PRESETS", []) if l and l[0] in "|:"]
    table, cur = {}, []
    for l in rows:
        if l.startswith("|"):
            cur = [plain(l[1:]).strip()]
            table[cur[0]] = cur
        else:
            cur.append(plain(l[1:]).strip())
    in_page = {k: (v[1], v[2]) for k, v in table.items() if len(v) == 3}
    if len(listed) < 5:
        problem(f"framefs-frametest --list: only {sorted(listed)}: the test must learn its new form")
    for k in sorted(set(listed) | set(in_page)):
        if listed.get(k) != in_page.get(k):
            problem(f"framefs-frametest preset {k}: --list says {listed.get(k)}, the page {in_page.get(k)}")


def render():
    paths = [p for p in os.environ.get("MAN_PAGES", "").split(":") if p]
    if len(paths) < 7:
        problem(f"MAN_PAGES names {len(paths)} pages, not the 7 docs/man/meson.build builds")
    for p in paths:
        r = subprocess.run(["man", "--warnings", "-l", p], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, MANWIDTH="80"))
        if r.returncode != 0 or r.stderr.strip():
            problem(f"{os.path.basename(p)}: man --warnings: exit {r.returncode}: {r.stderr.strip()}")
        elif len(r.stdout.split("\n")) < 20:
            problem(f"{os.path.basename(p)}: renders to only {len(r.stdout.splitlines())} lines")
    return len(paths)


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "options":
        daemon()
        getopt_page("mkfs.framefs", "MKFS", "mkfs.framefs.8")
        getopt_page("fsck.framefs", "FSCK", "fsck.framefs.8")
        admin()
        frametest()
        done = "every program's --help options are entries of its page and back; the presets agree"
    elif what == "render":
        done = f"{render()} pages render without warnings"
    else:
        print("usage: man.py options|render", file=sys.stderr)
        return 2
    if options.problems:
        print(f"{len(options.problems)} disagreement(s)", file=sys.stderr)
        return 1
    print("ok: " + done)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
