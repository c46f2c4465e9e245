"""What the grow tests share: a volume's files written the ways a facility
writes them (frames of several stripes with their tails, small files, a
project file with small overwrites: patches), and each read back against
the sha256 of what was written."""
import hashlib
import os

MiB = 1 << 20


def write_files(mnt, frames, frame_bytes, smalls, project_bytes, overwrites):
    """name -> sha256 of what was written."""
    sums = {}
    for i in range(frames):
        data = os.urandom(frame_bytes + 4096 * (i + 1))
        with open(os.path.join(mnt, "frame%03d.dpx" % i), "wb") as f:
            f.write(data)
        sums["frame%03d.dpx" % i] = hashlib.sha256(data).hexdigest()
    for i in range(smalls):  # the metadata pool or tails
        data = os.urandom(1000 + 700 * i)
        with open(os.path.join(mnt, "small%02d" % i), "wb") as f:
            f.write(data)
        sums["small%02d" % i] = hashlib.sha256(data).hexdigest()
    big = bytearray(os.urandom(project_bytes))
    with open(os.path.join(mnt, "project.db"), "wb") as f:
        f.write(big)
    with open(os.path.join(mnt, "project.db"), "r+b") as f:  # small overwrites: patches
        for k in range(overwrites):
            at = (k * 997 + 13) * 4096 % (len(big) - 4096)
            piece = os.urandom(4096)
            f.seek(at)
            f.write(piece)
            f.flush()
            os.fsync(f.fileno())
            big[at:at + 4096] = piece
    sums["project.db"] = hashlib.sha256(bytes(big)).hexdigest()
    return sums


def check_files(mnt, sums, what, failure):
    """Every file's sha256 as written, else failure(message) is raised."""
    for name, want in sums.items():
        with open(os.path.join(mnt, name), "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != want:
                raise failure("%s differs after %s" % (name, what))
