#!/usr/bin/env python3
# One QMP command to the qemu of nvme_vm.sh: qmp.py SOCKET COMMAND [JSON-ARGS].
# Prints qemu's answer; exits 1 when qemu answers with an error.  Events
# qemu sends meanwhile (DEVICE_DELETED, ...) are printed too, and skipped.
import json
import socket
import sys

TIMEOUT_S = 30


def main():
    path, cmd = sys.argv[1], sys.argv[2]
    args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT_S)
    s.connect(path)
    f = s.makefile("rw")

    def answer():
        while True:
            line = f.readline()
            if not line:
                raise SystemExit("qmp: qemu closed the monitor")
            msg = json.loads(line)
            if "event" in msg:
                print("qmp event: %s" % line.strip())
                continue
            return msg

    if "QMP" not in json.loads(f.readline()):
        raise SystemExit("qmp: no greeting")
    for c, a in (("qmp_capabilities", {}), (cmd, args)):
        f.write(json.dumps({"execute": c, "arguments": a}) + "\n")
        f.flush()
        r = answer()
        if "error" in r:
            print("qmp %s: %s" % (c, r["error"]))
            sys.exit(1)
    print("qmp %s %s: %s" % (cmd, json.dumps(args), json.dumps(r["return"])))


if __name__ == "__main__":
    main()
