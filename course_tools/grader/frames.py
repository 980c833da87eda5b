"""The framing of the pipe between the grader and the learner's process, both sides: a frame is an
8-byte big-endian length followed by the payload (codec.py says what a payload is). Standard
library only: the learner's process and the grader's side import it alike."""
import struct

FRAME = struct.Struct(">Q")   # a frame's length, in front of its payload
