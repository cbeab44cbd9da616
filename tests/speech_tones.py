#!/usr/bin/env python3
"""Writes a synthetic Speech Commands tree of tones, in the dataset's layout, with Python's wave.

    python3 tests/speech_tones.py OUT [--words 10|35] [--train N] [--val N] [--test N] [--seed S]

Word k of task.words' list (S4's order, data/speech_commands.h) is a tone of 40 + 40 k Hz
(40..440 Hz for SC10: below the 500 Hz Nyquist of task.sample_stride = 16), with a random phase,
amplitude 0.2..0.6, 0.5 to 1 s long, plus white noise of amplitude 0.05: 16 kHz mono 16-bit
PCM. Files are OUT/<word>/<hash>_nohash_<i>.wav; validation_list.txt and testing_list.txt name
the validation and test files, and _background_noise_/ holds one long 44.1 kHz file, which the
reader must not read.
"""
import argparse
import math
import os
import random
import struct
import wave

WORDS_35 = ["bed", "cat", "down", "five", "forward", "go", "house", "left", "marvin", "no", "on",
            "right", "sheila", "tree", "up", "visual", "yes", "backward", "bird", "dog", "eight",
            "follow", "four", "happy", "learn", "nine", "off", "one", "seven", "six", "stop",
            "three", "two", "wow", "zero"]
WORDS_10 = ["yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go"]
RATE = 16000


def write_wav(path, samples, rate=RATE):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(struct.pack(f"<{len(samples)}h", *samples))


def tone(rng, k):
    f, phase, amp = 40.0 + 40.0 * k, rng.uniform(0, 2 * math.pi), rng.uniform(0.2, 0.6)
    n = rng.randint(RATE // 2, RATE)
    return [max(-32768, min(32767, round(32767 * (amp * math.sin(2 * math.pi * f * t / RATE + phase)
                                                  + rng.uniform(-0.05, 0.05))))) for t in range(n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--words", choices=["10", "35"], default="10")
    ap.add_argument("--train", type=int, default=20, help="training clips per word")
    ap.add_argument("--val", type=int, default=4, help="validation clips per word")
    ap.add_argument("--test", type=int, default=10, help="test clips per word")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    lists = {"validation_list.txt": [], "testing_list.txt": []}
    for k, word in enumerate(WORDS_10 if a.words == "10" else WORDS_35):
        os.makedirs(os.path.join(a.out, word), exist_ok=True)
        for i in range(a.train + a.val + a.test):
            rel = f"{word}/{rng.getrandbits(32):08x}_nohash_{i}.wav"
            write_wav(os.path.join(a.out, rel), tone(rng, k))
            if i >= a.train:
                lists["validation_list.txt" if i < a.train + a.val else "testing_list.txt"].append(rel)
    for name, rels in lists.items():
        with open(os.path.join(a.out, name), "w") as f:
            f.write("".join(r + "\n" for r in rels))
    os.makedirs(os.path.join(a.out, "_background_noise_"), exist_ok=True)
    write_wav(os.path.join(a.out, "_background_noise_", "white_noise.wav"),
              [rng.randint(-3000, 3000) for _ in range(2 * 44100)], rate=44100)


if __name__ == "__main__":
    main()
