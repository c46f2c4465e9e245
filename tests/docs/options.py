#!/usr/bin/env python3
"""Every option a program accepts is in its --help, and its --help names only
options it accepts; the option lists of tools/admin/README.md and
tools/frametest/README.md name only options that exist.

What "accepts" means is read from the C source, not from the help:
  framefs            fs/daemon/main.c: the fuse_opt table cli_opts (-o NAME and
                     the switches in it), and the fields of libfuse's
                     fuse_parse_cmdline that main() reads (fo.foreground: -f,
                     fo.singlethread: -s, fo.clone_fd, fo.max_idle_threads; -d
                     is libfuse's own: debug and foreground)
  mkfs.framefs       mkfs/mkfs.c: getopt_long's option string and long options
  fsck.framefs       mkfs/fsck/fsck.c: the same
  framefs-admin      tools/admin/main.c: the same, and its command table
  framefs-frametest  tools/frametest/args.c: short_kind's letters and
                     parse_long's names (its own parser)
The binaries come from the environment (FRAMEFS, MKFS, FSCK, ADMIN, FRAMETEST),
the sources from SRCDIR (meson sets both).  Exit 0 when everything agrees,
1 with a line per disagreement.
"""
import os
import re
import subprocess
import sys

SRC = os.environ.get("SRCDIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
problems = []
VERBOSE = os.environ.get("OPTIONS_VERBOSE") == "1"  # print whom each README option is checked against


def problem(msg):
    problems.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def source(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def c_block(text, start_re, end_re):
    m = re.search(start_re, text, re.S)
    if not m:
        raise SystemExit(f"FAIL: no match for {start_re!r}: the test must learn the new form")
    e = re.search(end_re, text[m.end():], re.S)
    if not e:
        raise SystemExit(f"FAIL: no end {end_re!r} after {start_re!r}")
    return text[m.end():m.end() + e.start()]


def help_text(env, *extra):
    exe = os.environ.get(env)
    if not exe:
        raise SystemExit(f"FAIL: {env} is not set (meson sets it)")
    r = subprocess.run([exe, "--help", *extra], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        problem(f"{os.path.basename(exe)} --help: exit {r.returncode}")
    return r.stdout


# An option in a text: a dash, not glued to a word before it (mkfs.framefs,
# frametest-compatible, 4-way), then a letter.
OPT_RE = re.compile(r"(?<![\w./-])(--?[A-Za-z][\w-]*)")


def switches_in(text):
    return set(OPT_RE.findall(text))


def getopt_options(text):
    """-x for every letter of getopt_long's option string, --name for every
    entry of its struct option table."""
    m = re.search(r'getopt_long\(\s*argc\s*,\s*argv\s*,\s*"([^"]*)"', text)
    if not m:
        raise SystemExit("FAIL: no getopt_long call found")
    letters = re.sub(r"[^A-Za-z]", "", m.group(1))
    table = c_block(text, r"static const struct option \w+\[\]\s*=\s*\{", r"\};")
    longs = re.findall(r'\{\s*"([\w-]+)"\s*,', table)
    return {"-" + c for c in letters} | {"--" + n for n in longs}


def compare(prog, accepted, helped, what="option",
            only_first="the code accepts {}, its --help does not name it",
            only_second="--help names {}, the code does not accept it"):
    for o in sorted(accepted - helped):
        problem(f"{prog}: " + only_first.format(f"{what} {o}"))
    for o in sorted(helped - accepted):
        problem(f"{prog}: " + only_second.format(f"{what} {o}"))


# ---- framefs (the daemon) --------------------------------------------------------
def daemon():
    text = source("fs/daemon/main.c")
    table = c_block(text, r"static const struct fuse_opt cli_opts\[\]\s*=\s*\{", r"FUSE_OPT_END")
    entries = re.findall(r'(?:OPT|FUSE_OPT_KEY)\(\s*"([^"]+)"\s*,\s*(\w+)', table)
    switches, oopts, ignored = {"-o"}, set(), set()
    for name, arg in entries:
        name = re.sub(r"=.*", "", name)
        if name.startswith("-"):
            switches.add(name)
        elif arg == "KEY_DISCARD":
            ignored.add(name)
        else:
            oopts.add(name)
    # cli_proc: any x-... option is dropped too
    if re.search(r'strncmp\(arg, "x-", 2\)', text):
        ignored.add("x-*")
    # libfuse's fuse_parse_cmdline options whose results main() uses
    switches.add("-d")
    fields = set(re.findall(r"\bfo\.(\w+)", text))
    for field, opt in (("foreground", "-f"), ("singlethread", "-s")):
        if field in fields:
            switches.add(opt)
    for field in ("clone_fd", "max_idle_threads"):
        if field in fields:
            oopts.add(field)

    h = help_text("FRAMEFS")
    helped_o = set(re.findall(r"(?<![\w-])-o ([a-z_][\w]*)", h))
    compare("framefs", oopts, helped_o, "-o")
    compare("framefs", switches, switches_in(h))
    for w in sorted(ignored):
        if not re.search(r"(?<![\w-])" + re.escape(w) + r"(?![\w])", h):
            problem(f"framefs: the code takes and ignores -o {w}, its --help does not say so")
    return oopts | {"-o"}


# ---- mkfs.framefs, fsck.framefs -----------------------------------------------------
def getopt_program(prog, env, rel):
    accepted = getopt_options(source(rel))
    compare(prog, accepted, switches_in(help_text(env)))
    return accepted


# ---- framefs-admin --------------------------------------------------------------------
def admin():
    text = source("tools/admin/main.c")
    accepted = getopt_options(text)
    h = help_text("ADMIN")
    compare("framefs-admin", accepted, switches_in(h))
    # commands: the table, and those handled before it (scrub, grow)
    table = c_block(text, r"static const struct command commands\[\]\s*=\s*\{", r"\};")
    cmds = set(re.findall(r'\{\s*"([\w-]+)"', table))
    cmds |= set(re.findall(r'!strcmp\(words\[0\], "([\w-]+)"\)\)\s*(?:\{|return)', text))
    helped = set(re.findall(r"^  ([a-z][\w-]*) ", h, re.M))
    compare("framefs-admin", cmds, helped, "command")
    return accepted


# ---- framefs-frametest ---------------------------------------------------------------
def frametest():
    text = source("tools/frametest/args.c")
    kind = c_block(text, r"static enum argkind short_kind\(char o\)\s*\{", r"\n\}")
    letters = set()
    for s in re.findall(r'strchr\("(\w+)", o\)', kind):
        letters |= set(s)
    letters |= set(re.findall(r"o == '(\w)'", kind))
    longs = c_block(text, r"static int parse_long\(struct parse_state \*ps\)\s*\{", r"\n\}")
    names = set(re.findall(r'!strcmp\(name, "([\w-]+)"\)', longs))
    accepted = {"-" + c for c in letters} | {"--" + n for n in names}
    compare("framefs-frametest", accepted, switches_in(help_text("FRAMETEST")))
    return accepted


# ---- the READMEs -------------------------------------------------------------------------
# In a README an option belongs to the program named last before it in its
# sentence (mkfs.framefs -S, framefs-frametest --list, md's --re-add), else
# to the README's own program; -o NAME is always a mount option of framefs.
FOREIGN = {"losetup", "node_exporter", "md", "rm", "mv", "sh", "systemctl", "systemd-escape"}
PROG_RE = re.compile(r"(?<![\w./-])(framefs-admin|framefs-frametest|frametest|mkfs\.framefs|mkfs|"
                     r"fsck\.framefs|fsck|losetup|node_exporter|md(?='s)|rm|mv|sh|systemctl|systemd-escape)(?![\w.-])")


def readme(rel, own, known):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        lines = f.read().split("\n")
    # sentences of paragraphs (blank-line separated); each indented code line alone
    paras, cur = [], []
    for line in lines:
        if not line.strip() or line.startswith("    "):
            if cur:
                paras += re.split(r"(?<=\.)\s+(?=[A-Z`*(])", " ".join(cur))
                cur = []
            if line.strip():
                paras.append(line)
        else:
            cur.append(line)
    if cur:
        paras += re.split(r"(?<=\.)\s+(?=[A-Z`*(])", " ".join(cur))
    checked = 0
    for p in paras:
        if p.startswith("    "):
            spans = [(0, p)]
        else:  # only what is code: `...` spans
            spans = [(m.start(), m.group(0)) for m in re.finditer(r"`[^`]*`", p)]
        progs = [(m.start(), m.group(1)) for m in PROG_RE.finditer(p)]
        for base, s in spans:
            for m in re.finditer(r"(?<![\w./-])-o ([a-z_]\w*)", s):
                checked += 1
                if m.group(1) not in known["framefs"]:
                    problem(f"{rel}: framefs -o {m.group(1)}: no such mount option")
            for m in OPT_RE.finditer(s):
                opt = m.group(1)
                if opt == "-o":
                    continue
                before = [name for pos, name in progs if pos < base + m.start()]
                prog = before[-1] if before else own
                prog = {"frametest": "framefs-frametest", "mkfs": "mkfs.framefs",
                        "fsck": "fsck.framefs"}.get(prog, prog)
                if VERBOSE:
                    print(f"{rel}: {opt} -> {prog}")
                if prog in FOREIGN:
                    continue
                checked += 1
                if opt.split("=")[0] not in known[prog]:
                    problem(f"{rel}: {prog} {opt}: no such option (in: {s.strip()[:80]})")
    if checked == 0:
        problem(f"{rel}: no option found to check: the test must learn its new form")
    return checked


def main():
    known = {
        "framefs": daemon(),
        "mkfs.framefs": getopt_program("mkfs.framefs", "MKFS", "mkfs/mkfs.c"),
        "fsck.framefs": getopt_program("fsck.framefs", "FSCK", "mkfs/fsck/fsck.c"),
        "framefs-admin": admin(),
        "framefs-frametest": frametest(),
    }
    for prog, opts in known.items():
        if len(opts) < 3:
            problem(f"{prog}: only {sorted(opts)} found in the source: the test must learn its new form")
    n = readme("tools/admin/README.md", "framefs-admin", known)
    n += readme("tools/frametest/README.md", "framefs-frametest", known)
    if problems:
        print(f"{len(problems)} disagreement(s)", file=sys.stderr)
        return 1
    print("ok: " + ", ".join(f"{p} {len(o)}" for p, o in known.items()) +
          f" options, each in its --help and back; {n} options named in the READMEs exist")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
