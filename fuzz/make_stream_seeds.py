#!/usr/bin/env python3
"""Regenerates fuzz/seeds/vcp_stream/ from the parser's test corpora.

A seed is a header byte (bits 0-2: options as in vcp_parse, bit 0 --fuzzy, bit 1
--skip-fenced, bit 2 --keep-think; bits 3-7: K, the number of chunking bytes), K chunk
sizes, then a corpus reply; see fuzz_targets/vcp_stream.rs. Every case of
tests/corpus/vcp/ and tests/corpus/vcp-extra/ is written with its own flags, once in
1-byte chunks and once in mixed chunks (7, 2, 30 bytes in turn); every case of
tests/corpus/vcp/ also with all options on, in 3-byte chunks.

Run from anywhere: python3 fuzz/make_stream_seeds.py
"""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "fuzz" / "seeds" / "vcp_stream"
BITS = {"--fuzzy": 1, "--skip-fenced": 2, "--keep-think": 4}


def flags_byte(case_json: pathlib.Path) -> int:
    flags = json.loads(case_json.read_text(encoding="utf-8")).get("flags", [])
    return sum(BITS[f] for f in flags)


def seed(options: int, sizes: list[int], data: bytes) -> bytes:
    assert 0 <= options < 8 and len(sizes) < 32 and all(0 <= s < 256 for s in sizes)
    return bytes([options | len(sizes) << 3, *sizes]) + data


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.bin"):
        old.unlink()
    for corpus in ("vcp", "vcp-extra"):
        for txt in sorted((ROOT / "tests" / "corpus" / corpus).glob("*.txt")):
            data = txt.read_bytes()
            own = flags_byte(txt.with_suffix(".json"))
            variants = [(own, [1], "c1"), (own, [7, 2, 30], "cmix")]
            if corpus == "vcp":
                variants.append((0x07, [3], "c3"))
            for options, sizes, label in variants:
                name = f"{corpus.replace('-', '_')}__{txt.stem}_opt{options:02x}_{label}.bin"
                (OUT / name).write_bytes(seed(options, sizes, data))
    print(f"{len(list(OUT.glob('*.bin')))} seeds in {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
