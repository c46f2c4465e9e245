#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The floors of the filesystem library (fs/fs_i.h), one folder of fs/ each: no file calls a
function, or uses a variable, defined on a floor above its own.

Usage: fs_floors.py LIBFFFS_A [--pairs]

Reads the library's object files with nm (the NM environment variable, else
nm from PATH): each object's defined external symbols and the ones it leaves
undefined.  Fails (exit 1) on every reference that goes up a floor, and on an
object file FLOORS does not name (a new file is given its floor here).
--pairs also lists the pairs of files that call each other (informational:
a pair on one floor is allowed).

A lower floor tells a higher one something through a hook the higher one
registers (a function pointer in struct ffs), which nm does not see: that
is the point.
"""
import os
import re
import subprocess
import sys
from collections import defaultdict

# Bottom first.  One table: the floor of every file of the library.  A
# floor is a folder of fs/ (the top one, 'face', is fs/ itself), so a file's
# folder says which files it may call.
FLOORS = [
    # the on-disk format, the metadata block cache, request tracking, and
    # the repair of damaged data stripes (through the RAID engine): format,
    # watch and repair call nothing else in the library
    ('base', ['format', 'watch', 'repair', 'meta']),
    # the allocators (bitmaps in cached META blocks)
    ('space', ['alloc']),
    # the superblock, the journal and every metadata structure; small-data
    # files live in metadata pool blocks named by their inode
    ('meta', ['super', 'journal', 'btree', 'inode', 'extent', 'dir', 'xattr', 'small']),
    # file data: write buffers, read cache, tails, patches and their cache, merges
    ('data', ['data', 'wbuf', 'rcache', 'tail', 'patch', 'pcache', 'merge']),
    # an array grown under the volume: its records, taken on at mount, and
    # the restripe that moves the files (offline, or the daemon's thread)
    ('grow', ['grow', 'restripe']),
    # the mounted volume: mount, fsck, scrub, the tools' API
    ('volume', ['mount', 'check', 'scrub', 'tools']),
    # the POSIX operations the daemon calls (fs/ops.c, beside fs/ffs.h)
    ('face', ['ops']),
]


def floor_of():
    out = {}
    for level, (name, files) in enumerate(FLOORS):
        for f in files:
            assert f not in out, f + ' is on two floors'
            out[f] = (level, name)
    return out


def unit(member):
    """'data_tail.c.o' (meson names an object after its path below fs/:
    fs/data/tail.c), or a thin archive's '.../libfffs.a.p/data_tail.c.o'
    -> ('data', 'tail'); 'ops.c.o' -> ('face', 'ops')."""
    stem = os.path.basename(member).split('.')[0]
    folder, _, name = stem.rpartition('_')
    return folder or 'face', name


LINE = re.compile(r'^[^:]*:(?P<member>[^:]*\.o):\s*(?:[0-9a-fA-F]+\s+)?\S\s+(?P<sym>\S+)$')


FOLDER = {}  # file -> the folder nm found it in


def nm(lib, *flags):
    """{file: [symbol, ...]} from `nm -A flags lib`."""
    res = subprocess.run([os.environ.get('NM', 'nm'), '-A', *flags, lib], capture_output=True,
                         text=True, check=True)
    out = defaultdict(list)
    for line in res.stdout.splitlines():
        # lib.a:alloc.c.o:0000000000000000 T ffs_alloc_load, or lib.a:alloc.c.o:  U memset
        m = LINE.match(line)
        if m:
            folder, name = unit(m.group('member'))
            out[name].append(m.group('sym'))
            FOLDER[name] = folder
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    lib = argv[1]
    floors = floor_of()
    defined = nm(lib, '-g', '--defined-only')
    undefined = nm(lib, '-u')
    owner = {}
    for f, syms in defined.items():
        for s in syms:
            owner[s] = f
    bad = []
    unknown = sorted(f for f in set(defined) | set(undefined) if f not in floors)
    for f in unknown:
        bad.append('%s.c has no floor: give it one in FLOORS (%s)' % (f, __file__))
    for f in sorted(set(FOLDER) - set(unknown)):
        if FOLDER[f] != floors[f][1]:
            where = 'fs/' if FOLDER[f] == 'face' else 'fs/%s/' % FOLDER[f]
            bad.append('%s.c is in %s but on floor %s: move it, or change FLOORS'
                       % (f, where, floors[f][1]))
    edges = defaultdict(set)
    for f, syms in undefined.items():
        for s in syms:
            g = owner.get(s)
            if g and g != f:
                edges[(f, g)].add(s)
    for (f, g), syms in sorted(edges.items()):
        if f in floors and g in floors and floors[f][0] < floors[g][0]:
            bad.append('%s.c (floor %s) calls up into %s.c (floor %s): %s'
                       % (f, floors[f][1], g, floors[g][1], ' '.join(sorted(syms))))
    if '--pairs' in argv:
        for (f, g), syms in sorted(edges.items()):
            if f < g and (g, f) in edges:
                print('pair %s.c <-> %s.c: %s / %s' % (f, g, ' '.join(sorted(syms)),
                                                      ' '.join(sorted(edges[(g, f)]))))
    for b in bad:
        print(b)
    if not edges:
        print('no calls between the files of %s: is it the filesystem library?' % lib)
        return 1
    print('%d files on %d floors, %d calls between files, %d problems'
          % (len(floors), len(FLOORS), len(edges), len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
