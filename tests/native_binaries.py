"""What a shared library is and what it exports, read from its bytes: ELF (Linux), PE (Windows) and
64-bit Mach-O (macOS), so the tests check libraries built for other machines with no tool beyond
Python.  Only what tests/test_native_foreign.py asks: the format and machine, the exported function
names (the run-time's, bbk_*), and a PE file's imports.
"""

from __future__ import annotations

import struct
from pathlib import Path

ELF_MACHINES = {62: "x86_64", 183: "aarch64"}
PE_MACHINES = {0x8664: "x86_64", 0xAA64: "aarch64"}
MACHO_CPUS = {0x01000007: "x86_64", 0x0100000C: "arm64"}


def identify(path) -> tuple[str, str]:
    """('elf' | 'pe' | 'macho', machine)."""
    data = Path(path).read_bytes()
    if data[:4] == b"\x7fELF":
        return "elf", ELF_MACHINES.get(struct.unpack_from("<H", data, 18)[0], "?")
    if data[:2] == b"MZ":
        pe = struct.unpack_from("<I", data, 0x3C)[0]
        assert data[pe:pe + 4] == b"PE\0\0"
        return "pe", PE_MACHINES.get(struct.unpack_from("<H", data, pe + 4)[0], "?")
    if struct.unpack_from("<I", data, 0)[0] == 0xFEEDFACF:
        return "macho", MACHO_CPUS.get(struct.unpack_from("<I", data, 4)[0], "?")
    return "?", "?"


def exports(path, prefix=("bbk_", "bbkc_")) -> set[str]:
    """The exported functions whose names start with `prefix` (the run-time's bbk_, the kernels' bbkc_)."""
    kind, _ = identify(path)
    data = Path(path).read_bytes()
    names = {"elf": _elf_exports, "pe": _pe_exports, "macho": _macho_exports}[kind](data)
    return {n for n in names if n.startswith(prefix)}


def _cstr(data: bytes, at: int) -> str:
    return data[at:data.index(b"\0", at)].decode("ascii", "replace")


def _elf_exports(data: bytes) -> set[str]:
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    out = set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 11:  # SHT_DYNSYM
            continue
        strtab = sections[link][4]
        for at in range(offset, offset + size, entsize):
            name, info, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", data, at)
            if shndx != 0 and info >> 4 in (1, 2) and info & 0xF == 2:  # defined, global or weak, a function
                out.add(_cstr(data, strtab + name))
    return out


def _pe_layout(data: bytes):
    pe = struct.unpack_from("<I", data, 0x3C)[0]
    nsections, _, _, _, opt_size = struct.unpack_from("<HIIIH", data, pe + 6)
    opt = pe + 24
    assert struct.unpack_from("<H", data, opt)[0] == 0x20B, "PE32+ expected"
    dirs = [struct.unpack_from("<II", data, opt + 112 + 8 * k) for k in range(16)]
    table = opt + opt_size
    sections = [struct.unpack_from("<IIII", data, table + 40 * k + 8) for k in range(nsections)]

    def offset(rva: int) -> int:
        for vsize, vaddr, rawsize, rawptr in sections:
            if vaddr <= rva < vaddr + max(vsize, rawsize):
                return rawptr + rva - vaddr
        raise ValueError(f"rva {rva:#x} in no section")

    return dirs, offset


def _pe_exports(data: bytes) -> set[str]:
    dirs, offset = _pe_layout(data)
    rva, size = dirs[0]
    if not size:
        return set()
    at = offset(rva)
    count, names_rva = struct.unpack_from("<I", data, at + 24)[0], struct.unpack_from("<I", data, at + 32)[0]
    return {_cstr(data, offset(struct.unpack_from("<I", data, offset(names_rva) + 4 * k)[0])) for k in range(count)}


def pe_imports(path) -> dict[str, list[str]]:
    """{DLL name: the functions imported from it by name}."""
    data = Path(path).read_bytes()
    dirs, offset = _pe_layout(data)
    rva, size = dirs[1]
    out: dict[str, list[str]] = {}
    at = offset(rva)
    while True:
        lookup, _, _, name_rva, thunk = struct.unpack_from("<IIIII", data, at)
        if not name_rva:
            return out
        names = out.setdefault(_cstr(data, offset(name_rva)), [])
        entry = offset(lookup or thunk)
        while True:
            value, = struct.unpack_from("<Q", data, entry)
            if not value:
                break
            if not value >> 63:  # by name: a hint, then the name
                names.append(_cstr(data, offset(value & 0x7FFFFFFF) + 2))
            entry += 8
        at += 20


def _macho_exports(data: bytes) -> set[str]:
    ncmds, = struct.unpack_from("<I", data, 16)
    at, out = 32, set()
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == 0x2:  # LC_SYMTAB
            symoff, nsyms, stroff, _ = struct.unpack_from("<IIII", data, at + 8)
            for k in range(nsyms):
                strx, kind, sect, _, _ = struct.unpack_from("<IBBHQ", data, symoff + 16 * k)
                if kind & 0x01 and kind & 0x0E == 0x0E and not kind & 0xE0:  # external, in a section, no stab
                    out.add(_cstr(data, stroff + strx).removeprefix("_"))
        at += size
    return out
