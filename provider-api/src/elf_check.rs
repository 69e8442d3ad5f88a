//! A structural check of an ELF shared object before the dynamic loader maps it.
//!
//! `dlopen` maps a file's segments as its program headers describe them; a file cut short (a
//! copy interrupted, a partial download) still maps, and the first touch of a page past the
//! end of the file kills the process with SIGBUS. No signal handler can turn that into an
//! error, so the host reads the headers first and refuses a file whose headers, segments or
//! section table reach past its end.

use std::io::{Read, Seek, SeekFrom};

const MAGIC: &[u8; 4] = b"\x7fELF";

/// Why a file is not a whole ELF shared object; `None` from [`check`] means it looks whole.
pub type Problem = String;

/// Reads `file`'s ELF headers and checks that everything they point at lies within the file.
///
/// Files that are not ELF at all are left to the dynamic loader (it explains those itself).
pub fn check(file: &mut std::fs::File) -> Option<Problem> {
    let length = match file.metadata() {
        Ok(metadata) => metadata.len(),
        Err(err) => return Some(format!("cannot read the file: {err}")),
    };
    if let Err(err) = file.seek(SeekFrom::Start(0)) {
        return Some(format!("cannot read the file: {err}"));
    }
    let mut ident = [0u8; 64];
    let read = read_up_to(file, &mut ident);
    if read < 4 || &ident[..4] != MAGIC {
        return None;
    }
    if read < 52 {
        return Some(format!(
            "truncated: {length} bytes, shorter than an ELF header"
        ));
    }
    let header = match Header::parse(&ident[..read]) {
        Ok(header) => header,
        Err(problem) => return Some(problem),
    };
    // A shared object has at least its dynamic segment; a file with none would also make the
    // table below empty and its entry size zero.
    if header.phnum == 0 {
        return Some("not a shared library: it has no program headers".into());
    }
    let table_end = |offset: u64, count: u64, size: u64| offset.saturating_add(count * size);
    if table_end(header.phoff, header.phnum, header.phentsize) > length {
        return Some(truncated(length, "its program headers"));
    }
    if header.shnum > 0 && table_end(header.shoff, header.shnum, header.shentsize) > length {
        return Some(truncated(length, "its section headers"));
    }
    let mut table = vec![0u8; (header.phnum * header.phentsize) as usize];
    if file.seek(SeekFrom::Start(header.phoff)).is_err()
        || read_up_to(file, &mut table) < table.len()
    {
        return Some(truncated(length, "its program headers"));
    }
    for entry in table.chunks(header.phentsize as usize) {
        let (offset, size) = header.segment(entry);
        if offset.saturating_add(size) > length {
            return Some(truncated(length, "a loadable segment"));
        }
    }
    None
}

fn truncated(length: u64, what: &str) -> Problem {
    format!("truncated or damaged: {what} reach past the end of the file ({length} bytes); copy or rebuild the plugin")
}

fn read_up_to(file: &mut std::fs::File, buffer: &mut [u8]) -> usize {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => filled += n,
        }
    }
    filled
}

/// The parts of the ELF file header the check needs, widened to 64 bits.
struct Header {
    wide: bool,
    little: bool,
    phoff: u64,
    shoff: u64,
    phentsize: u64,
    phnum: u64,
    shentsize: u64,
    shnum: u64,
}

impl Header {
    fn parse(bytes: &[u8]) -> Result<Header, Problem> {
        let wide = match bytes[4] {
            1 => false,
            2 => true,
            other => return Err(format!("not a valid ELF file (class {other})")),
        };
        let little = match bytes[5] {
            1 => true,
            2 => false,
            other => return Err(format!("not a valid ELF file (data encoding {other})")),
        };
        if wide && bytes.len() < 64 {
            return Err("truncated: shorter than an ELF header".into());
        }
        let field = |at: usize, size: usize| read_uint(&bytes[at..at + size], little);
        let header = if wide {
            Header {
                wide,
                little,
                phoff: field(32, 8),
                shoff: field(40, 8),
                phentsize: field(54, 2),
                phnum: field(56, 2),
                shentsize: field(58, 2),
                shnum: field(60, 2),
            }
        } else {
            Header {
                wide,
                little,
                phoff: field(28, 4),
                shoff: field(32, 4),
                phentsize: field(42, 2),
                phnum: field(44, 2),
                shentsize: field(46, 2),
                shnum: field(48, 2),
            }
        };
        let least = if wide { 56 } else { 32 };
        if header.phnum > 0 && header.phentsize < least {
            return Err(format!(
                "not a valid ELF file (program header entries of {} bytes)",
                header.phentsize
            ));
        }
        Ok(header)
    }

    /// A program header's `(p_offset, p_filesz)`.
    fn segment(&self, entry: &[u8]) -> (u64, u64) {
        if self.wide {
            (
                read_uint(&entry[8..16], self.little),
                read_uint(&entry[32..40], self.little),
            )
        } else {
            (
                read_uint(&entry[4..8], self.little),
                read_uint(&entry[16..20], self.little),
            )
        }
    }
}

fn read_uint(bytes: &[u8], little: bool) -> u64 {
    let fold = |value: u64, byte: &u8| (value << 8) | u64::from(*byte);
    if little {
        bytes.iter().rev().fold(0, fold)
    } else {
        bytes.iter().fold(0, fold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_library() -> Option<std::path::PathBuf> {
        // The test binary itself is an ELF file with program and section headers.
        std::env::current_exe().ok()
    }

    #[test]
    fn a_whole_elf_file_passes_and_a_cut_one_is_refused() {
        let Some(exe) = own_library() else { return };
        let bytes = std::fs::read(&exe).unwrap();
        assert_eq!(&bytes[..4], MAGIC);
        assert_eq!(check(&mut std::fs::File::open(&exe).unwrap()), None);
        let dir = tempfile::tempdir().unwrap();
        for cut in [40usize, 100, 4096, bytes.len() / 2, bytes.len() - 1] {
            let path = dir.path().join(format!("cut{cut}.so"));
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let problem = check(&mut std::fs::File::open(&path).unwrap())
                .unwrap_or_else(|| panic!("a file cut at {cut} passed"));
            assert!(problem.contains("truncated"), "{problem}");
        }
    }

    #[test]
    fn files_that_are_not_elf_are_left_to_the_loader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("text.so");
        std::fs::write(&path, b"not a library at all").unwrap();
        assert_eq!(check(&mut std::fs::File::open(&path).unwrap()), None);
    }

    #[test]
    fn a_file_without_program_headers_is_refused_not_a_panic() {
        let Some(exe) = own_library() else { return };
        let mut bytes = std::fs::read(&exe).unwrap();
        // e_phnum (offset 56) and e_phentsize (54) of a 64-bit little-endian header set to 0.
        if bytes[4] != 2 || bytes[5] != 1 {
            return;
        }
        bytes[54..58].fill(0);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("headless.so");
        std::fs::write(&path, &bytes).unwrap();
        let problem = check(&mut std::fs::File::open(&path).unwrap()).expect("refused");
        assert!(problem.contains("no program headers"), "{problem}");
    }
}
