#!/usr/bin/python3
"""actions.py ART.tsl

Prints, for every rank program of a pipelined artifact, the sequence of
schedule actions its instructions carry (Instruction.action: phase, stage,
microbatch; docs/pipeline.md), consecutive instructions of one action
merged: `rank 0: 0F0 0SEND_F0 ...`. Reads the protobuf wire format
directly (Program.instructions = 8, Instruction.op = 1, .action = 6,
PipelineAction.phase = 1, .stage = 2, .microbatch = 3), so it needs no
generated code."""
import glob
import os
import sys


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def fields(buf):
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wire)
        yield number, value


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def actions(path):
    out = []
    for number, inst in fields(open(path, "rb").read()):
        if number != 8:
            continue
        phase, stage, mb = "", 0, 0
        for n, v in fields(inst):
            if n == 6:
                for an, av in fields(v):
                    if an == 1:
                        phase = av.decode()
                    elif an == 2:
                        stage = signed(av)
                    elif an == 3:
                        mb = signed(av)
        if not phase:
            continue
        text = "%d%s" % (stage, phase) + ("" if phase == "STEP" else str(mb))
        if not out or out[-1] != text:
            out.append(text)
    return out


def main():
    paths = glob.glob(os.path.join(sys.argv[1], "rank*.program.pb"))
    for path in sorted(paths, key=lambda p: int(os.path.basename(p)[4:].split(".")[0])):
        rank = os.path.basename(path)[4:].split(".")[0]
        print("rank %s: %s" % (rank, " ".join(actions(path))))


if __name__ == "__main__":
    main()
