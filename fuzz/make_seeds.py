#!/usr/bin/env python3
"""Regenerates fuzz/seeds/vcp_parse/ and fuzz/seeds/vcp_stream/ from the parser's test corpora.

vcp_parse: a seed is one options byte (bit 0 --fuzzy, bit 1 --skip-fenced, bit 2
--keep-think, as the fuzz target reads it) followed by a corpus reply. Every case of
tests/corpus/vcp/ is written with all options off (0x00) and all on (0x07), and, when its
JSON names flags, with exactly those; every case of tests/corpus/vcp-extra/ with its own
flags.

vcp_stream: a seed is a header byte (bits 0-2: the options as above; bits 3-7: K, the
number of chunking bytes), K chunk sizes, then a corpus reply; see
fuzz_targets/vcp_stream.rs. Every case of both corpora is written with its own flags, once
in 1-byte chunks and once in mixed chunks (7, 2, 30 bytes in turn); every case of
tests/corpus/vcp/ also with all options on, in 3-byte chunks.

native_stream: a seed is a header byte (bits 0-1: the provider, 0 openai, 1
openai_responses, 2 anthropic, 3 gemini; bits 2-7: K, the number of chunking bytes), K
chunk sizes, then a response body; see fuzz_targets/native_stream.rs. Every file of
tests/fixtures/native/PROVIDER/ (streams and bodies alike) is written whole, in 1-byte
chunks and in mixed chunks (5, 1, 64 bytes in turn).

textfmt_stream: a seed is a protocol byte (the format's position in TextFormat::ALL, their
number for auto), a byte K, K chunk sizes, then a reply; see fuzz_targets/textfmt_stream.rs. Every
case of tests/corpus/textfmt/FORMAT/ is written for its format whole and in mixed chunks
(1, 4, 9), and for auto in 3-byte chunks.

result_roundtrip: a seed is a protocol byte (a slot, see fuzz_targets/result_roundtrip.rs),
an error-bits byte, then result texts separated by U+001F. For every protocol, the calls
of every text corpus become results (so every format's markup is in some result), as
successes and as errors.

Run from anywhere: python3 fuzz/make_seeds.py
"""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEEDS = ROOT / "fuzz" / "seeds"
BITS = {"--fuzzy": 1, "--skip-fenced": 2, "--keep-think": 4}


def flags_byte(case_json: pathlib.Path) -> int:
    flags = json.loads(case_json.read_text(encoding="utf-8")).get("flags", [])
    return sum(BITS[f] for f in flags)


def cases():
    """(corpus name, reply file, its own options byte) for every corpus case."""
    for corpus in ("vcp", "vcp-extra"):
        for txt in sorted((ROOT / "tests" / "corpus" / corpus).glob("*.txt")):
            yield corpus, txt, flags_byte(txt.with_suffix(".json"))


def text_formats() -> list[str]:
    """The format ids in TextFormat::ALL order (TEXT_PROTOCOL_IDS without vcp)."""
    source = (ROOT / "src" / "model" / "profile.rs").read_text()
    table = source.split("pub const TEXT_PROTOCOL_IDS", 1)[1].split("];", 1)[0]
    ids = [line.strip().strip('",') for line in table.splitlines()[1:] if line.strip().startswith('"')]
    return [i for i in ids if i != "vcp"]


def fresh(target: str) -> pathlib.Path:
    """The seed directory of `target`, emptied of old seeds."""
    out = SEEDS / target
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.bin"):
        old.unlink()
    return out


def stream_seed(options: int, sizes: list[int], data: bytes) -> bytes:
    assert 0 <= options < 8 and len(sizes) < 32 and all(0 <= s < 256 for s in sizes)
    return bytes([options | len(sizes) << 3, *sizes]) + data


PROVIDERS = ["openai", "openai_responses", "anthropic", "gemini"]


def native_seed(provider: int, sizes: list[int], data: bytes) -> bytes:
    assert 0 <= provider < 4 and len(sizes) < 64 and all(0 <= s < 256 for s in sizes)
    return bytes([provider | len(sizes) << 2, *sizes]) + data


def main() -> None:
    out = fresh("vcp_parse")
    for corpus, txt, own in cases():
        for byte in sorted(({0x00, 0x07} if corpus == "vcp" else set()) | {own}):
            name = f"{corpus.replace('-', '_')}__{txt.stem}_opt{byte:02x}.bin"
            (out / name).write_bytes(bytes([byte]) + txt.read_bytes())
    print(f"{len(list(out.glob('*.bin')))} seeds in {out.relative_to(ROOT)}")

    out = fresh("vcp_stream")
    for corpus, txt, own in cases():
        variants = [(own, [1], "c1"), (own, [7, 2, 30], "cmix")]
        if corpus == "vcp":
            variants.append((0x07, [3], "c3"))
        for options, sizes, label in variants:
            name = f"{corpus.replace('-', '_')}__{txt.stem}_opt{options:02x}_{label}.bin"
            (out / name).write_bytes(stream_seed(options, sizes, txt.read_bytes()))
    print(f"{len(list(out.glob('*.bin')))} seeds in {out.relative_to(ROOT)}")

    out = fresh("native_stream")
    for number, provider in enumerate(PROVIDERS):
        for fixture in sorted((ROOT / "tests" / "fixtures" / "native" / provider).iterdir()):
            if fixture.suffix not in (".sse", ".json"):
                continue
            for sizes, label in (([], "whole"), ([1], "c1"), ([5, 1, 64], "cmix")):
                name = f"{provider}__{fixture.stem}_{fixture.suffix[1:]}_{label}.bin"
                (out / name).write_bytes(native_seed(number, sizes, fixture.read_bytes()))
    print(f"{len(list(out.glob('*.bin')))} seeds in {out.relative_to(ROOT)}")

    out = fresh("textfmt_stream")
    formats = text_formats()
    for number, fmt in enumerate(formats):
        for txt in sorted((ROOT / "tests" / "corpus" / "textfmt" / fmt).glob("*.txt")):
            data = txt.read_bytes()
            for pick, sizes, label in ((number, [], "whole"), (number, [1, 4, 9], "cmix"), (len(formats), [3], "auto")):
                (out / f"{fmt}__{txt.stem}_{label}.bin").write_bytes(bytes([pick, len(sizes), *sizes]) + data)
    print(f"{len(list(out.glob('*.bin')))} seeds in {out.relative_to(ROOT)}")

    out = fresh("result_roundtrip")
    calls = [txt.read_bytes() for fmt in formats
             for txt in sorted((ROOT / "tests" / "corpus" / "textfmt" / fmt).glob("*.txt"))[:2]]
    calls += [txt.read_bytes() for _, txt, _ in list(cases())[:12]]
    batches = [calls[i:i + 4] for i in range(0, len(calls), 4)]
    for pick in range(8 + 2 * len(formats) + 5):
        for number, batch in enumerate(batches[:6]):
            errors = 0b0101 if number % 2 else 0
            data = bytes([pick, errors]) + b"\x1f".join(batch)
            (out / f"p{pick:02d}_{number}.bin").write_bytes(data)
    print(f"{len(list(out.glob('*.bin')))} seeds in {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
