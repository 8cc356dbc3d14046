//! A [`Store`] over one served directory on disk, with `std::fs` only.
//!
//! Path safety: a name is made relative and refused if it has `.` or `..`
//! components ([`safe_name`]); whatever it names must resolve (symbolic
//! links followed) to a place inside the served directory and outside its
//! partial files' directory, so a link leading outside (or to the
//! partials) is refused, one inside is followed. A file received goes
//! where its deepest existing directory resolves to, checked before any
//! directory is created. Listings leave out links and names that are not
//! UTF-8.
//!
//! Files being received live in `.saratoga/partial/` under the served
//! directory (hidden from listings, refused as a name): the data, written
//! at its offsets, and a log of the ranges written (a header naming the
//! file, [`header`], then one `start end` line per write), so that a
//! receiver restarted mid-transfer resumes from what it had, if it is the
//! same file ([`PartialId::resumes`]). A commit syncs the data and renames
//! it to its name.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::ranges::RangeSet;
use super::store::{FileInfo, ListEntry, PartialId, Store, StoreError, safe_name};

/// The directory, under the served one, that holds partial files.
pub const PARTIAL_DIR: &str = ".saratoga";

#[derive(Debug)]
pub struct DiskStore {
    root: PathBuf,
    /// Partial files open, by their safe name.
    open: HashMap<String, Partial>,
}

/// A partial file: its data, its range log and the size it is to have.
#[derive(Debug)]
struct Partial {
    data: File,
    log: File,
    size: u64,
}

fn io(context: &Path, error: std::io::Error) -> StoreError {
    match error.kind() {
        std::io::ErrorKind::NotFound => StoreError::NotFound(context.display().to_string()),
        std::io::ErrorKind::PermissionDenied => StoreError::Denied(context.display().to_string()),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
            StoreError::NoSpace(format!("{}: {error}", context.display()))
        }
        _ => StoreError::Io(format!("{}: {error}", context.display())),
    }
}

impl DiskStore {
    /// Serves `root`, which must be a directory.
    pub fn new(root: impl AsRef<Path>) -> Result<DiskStore, StoreError> {
        let given = root.as_ref();
        let root = fs::canonicalize(given).map_err(|e| io(given, e))?;
        if !root.is_dir() {
            // It exists (it resolved): "not found" would send the user
            // looking for a file that is there.
            return Err(StoreError::Io(format!("not a directory: {}", given.display())));
        }
        Ok(DiskStore {
            root,
            open: HashMap::new(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path `name` stands for, checked for safety but not resolved.
    fn path(&self, name: &str) -> Result<(String, PathBuf), StoreError> {
        let denied = || StoreError::Denied(name.to_owned());
        let safe = safe_name(name).ok_or_else(denied)?;
        if safe.split('/').next() == Some(PARTIAL_DIR) {
            return Err(denied());
        }
        let path = if safe.is_empty() {
            self.root.clone()
        } else {
            self.root.join(&safe)
        };
        Ok((safe, path))
    }

    /// Refuses a resolved path outside the root or inside its partials.
    fn check_inside(&self, real: &Path, name: &str) -> Result<(), StoreError> {
        if !real.starts_with(&self.root) || real.starts_with(self.root.join(PARTIAL_DIR)) {
            return Err(StoreError::Denied(name.to_owned()));
        }
        Ok(())
    }

    /// The existing file or directory `name` names, resolved inside the root.
    fn existing(&self, name: &str) -> Result<PathBuf, StoreError> {
        let (_, path) = self.path(name)?;
        let real = fs::canonicalize(&path).map_err(|e| io(Path::new(name), e))?;
        self.check_inside(&real, name)?;
        Ok(real)
    }

    /// The directory a new file `target` (for `name`) goes in, created if
    /// need be: where its deepest existing ancestor resolves to, checked
    /// before anything is created, then the missing plain components.
    fn new_parent(&self, name: &str, target: &Path) -> Result<PathBuf, StoreError> {
        let mut existing = target.parent().unwrap_or(&self.root);
        let mut missing = Vec::new();
        // The root exists, so this stops at it at the latest.
        while !existing.exists()
            && let (Some(component), Some(up)) = (existing.file_name(), existing.parent())
        {
            missing.push(component);
            existing = up;
        }
        let real = fs::canonicalize(existing).map_err(|e| io(Path::new(name), e))?;
        self.check_inside(&real, name)?;
        let dir = missing
            .iter()
            .rev()
            .fold(real, |dir, component| dir.join(component));
        fs::create_dir_all(&dir).map_err(|e| io(Path::new(name), e))?;
        Ok(dir)
    }

    /// Removes partial files no transfer has open that were last written
    /// more than `keep` before `now`, then, oldest first, those past
    /// `budget` bytes in all: what failed or abandoned transfers left,
    /// kept a while for a resumption. Returns the names removed.
    pub fn prune_partials(&mut self, now: SystemTime, keep: Duration, budget: u64) -> Vec<String> {
        let dir = self.root.join(PARTIAL_DIR).join("partial");
        let Ok(entries) = fs::read_dir(&dir) else {
            return Vec::new();
        };
        let open: Vec<PathBuf> = self.open.keys().map(|safe| self.partial_paths(safe).0).collect();
        // (last written, bytes on disk, data file) of each closed partial.
        let mut closed: Vec<(SystemTime, u64, PathBuf)> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "data") && !open.contains(path))
            .filter_map(|path| {
                let metadata = fs::metadata(&path).ok()?;
                // Blocks taken, not the announced size: a partial is sparse.
                let bytes = std::os::unix::fs::MetadataExt::blocks(&metadata) * 512;
                Some((metadata.modified().ok()?, bytes, path))
            })
            .collect();
        closed.sort();
        let mut total: u64 = closed.iter().map(|(_, bytes, _)| bytes).sum();
        let mut removed = Vec::new();
        for (written, bytes, data) in closed {
            let stale = now.duration_since(written).is_ok_and(|age| age > keep);
            if !stale && total <= budget {
                continue;
            }
            let log = data.with_extension("ranges");
            if fs::remove_file(&data).is_ok() {
                let _ = fs::remove_file(&log);
                total -= bytes;
                removed.push(
                    data.file_stem()
                        .map_or_else(String::new, |flat| unflatten(&flat.to_string_lossy())),
                );
            }
        }
        removed
    }

    fn partial_paths(&self, safe: &str) -> (PathBuf, PathBuf) {
        let flat = flatten(safe);
        let dir = self.root.join(PARTIAL_DIR).join("partial");
        (
            dir.join(format!("{flat}.data")),
            dir.join(format!("{flat}.ranges")),
        )
    }

    fn opened(&self, name: &str) -> Result<&Partial, StoreError> {
        self.open
            .get(name)
            .ok_or_else(|| StoreError::NotFound(format!("{name} (no partial file open)")))
    }
}

/// A name as one file name in the partials' directory: `%` and `/`
/// escaped, so that no two names share one.
fn flatten(safe: &str) -> String {
    safe.replace('%', "%25").replace('/', "%2F")
}

/// The name [`flatten`] made `flat` of.
fn unflatten(flat: &str) -> String {
    flat.replace("%2F", "/").replace("%25", "%")
}

fn info_of(metadata: &fs::Metadata) -> FileInfo {
    FileInfo {
        size: if metadata.is_dir() { 0 } else { metadata.len() },
        mtime: metadata
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs()),
        is_dir: metadata.is_dir(),
    }
}

/// A range log's first line: the file the partial is of.
fn header(id: &PartialId) -> String {
    let hex: String = id.checksum.bytes().iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "saratoga partial: size {} mtime {} checksum {} {hex}",
        id.size,
        id.mtime,
        id.checksum.kind() as u8
    )
}

/// The ranges a range log holds, if its partial may be resumed as `id`.
fn read_log(path: &Path, id: &PartialId) -> Option<Vec<Range<u64>>> {
    let file = File::open(path).ok()?;
    let mut lines = BufReader::new(file).lines();
    let logged = lines.next()?.ok()?;
    // Equal headers are equal ids: this is `id.resumes(&stored)`.
    if logged != header(id) || id.checksum.kind().is_none() {
        return None;
    }
    let mut have = RangeSet::new();
    for line in lines {
        // A line cut short by a crash is ignored.
        let Some((start, end)) = line.ok().and_then(|l| {
            let (a, b) = l.split_once(' ')?;
            Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?))
        }) else {
            continue;
        };
        if start < end && end <= id.size {
            have.insert(start..end);
        }
    }
    Some(have.iter().collect())
}

impl Store for DiskStore {
    fn info(&self, name: &str) -> Result<FileInfo, StoreError> {
        let path = self.existing(name)?;
        let metadata = fs::metadata(&path).map_err(|e| io(Path::new(name), e))?;
        Ok(info_of(&metadata))
    }

    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError> {
        let path = self.existing(name)?;
        let file = File::open(&path).map_err(|e| io(Path::new(name), e))?;
        let mut filled = 0;
        while filled < buf.len() {
            let read = file
                .read_at(&mut buf[filled..], offset + filled as u64)
                .map_err(|e| io(Path::new(name), e))?;
            if read == 0 {
                break;
            }
            filled += read;
        }
        Ok(filled)
    }

    fn list(&self, dir: &str) -> Result<Vec<ListEntry>, StoreError> {
        let path = self.existing(dir)?;
        let mut entries = Vec::new();
        for entry in fs::read_dir(&path).map_err(|e| io(Path::new(dir), e))? {
            let entry = entry.map_err(|e| io(Path::new(dir), e))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if (path == self.root && name == PARTIAL_DIR) || metadata.file_type().is_symlink() {
                continue;
            }
            entries.push(ListEntry {
                name,
                info: info_of(&metadata),
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn delete(&mut self, name: &str) -> Result<(), StoreError> {
        let path = self.existing(name)?;
        if path.is_dir() {
            return Err(StoreError::Denied(format!("{name} is a directory")));
        }
        fs::remove_file(&path).map_err(|e| io(Path::new(name), e))
    }

    fn open_partial(&mut self, name: &str, id: &PartialId) -> Result<Vec<Range<u64>>, StoreError> {
        let size = id.size;
        let (safe, _) = self.path(name)?;
        if safe.is_empty() {
            return Err(StoreError::Denied(name.to_owned()));
        }
        let (data_path, log_path) = self.partial_paths(&safe);
        let dir = data_path.parent().unwrap_or(&self.root);
        fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let resumed = match read_log(&log_path, id) {
            Some(ranges) if data_path.exists() => ranges,
            _ => {
                // Another file's partial (or none): truncated, started afresh.
                let mut log = File::create(&log_path).map_err(|e| io(&log_path, e))?;
                writeln!(log, "{}", header(id)).map_err(|e| io(&log_path, e))?;
                File::create(&data_path).map_err(|e| io(&data_path, e))?;
                Vec::new()
            }
        };
        let data = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&data_path)
            .map_err(|e| io(&data_path, e))?;
        data.set_len(size).map_err(|e| io(&data_path, e))?;
        let log = OpenOptions::new()
            .append(true)
            .open(&log_path)
            .map_err(|e| io(&log_path, e))?;
        self.open.insert(safe, Partial { data, log, size });
        Ok(resumed)
    }

    fn write_partial(&mut self, name: &str, offset: u64, data: &[u8]) -> Result<(), StoreError> {
        let (safe, _) = self.path(name)?;
        let partial = self.opened(&safe)?;
        let end = offset.saturating_add(data.len() as u64);
        if end > partial.size {
            return Err(StoreError::TooBig(name.to_owned()));
        }
        partial
            .data
            .write_all_at(data, offset)
            .map_err(|e| io(Path::new(name), e))?;
        writeln!(&partial.log, "{offset} {end}").map_err(|e| io(Path::new(name), e))
    }

    fn read_partial(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError> {
        let (safe, _) = self.path(name)?;
        let partial = self.opened(&safe)?;
        let len = buf
            .len()
            .min(usize::try_from(partial.size.saturating_sub(offset)).unwrap_or(usize::MAX));
        partial
            .data
            .read_exact_at(&mut buf[..len], offset)
            .map_err(|e| io(Path::new(name), e))?;
        Ok(len)
    }

    fn commit(&mut self, name: &str) -> Result<(), StoreError> {
        let (safe, target) = self.path(name)?;
        let file_name = target
            .file_name()
            .ok_or_else(|| StoreError::Denied(name.to_owned()))?;
        let parent = self.new_parent(name, &target)?;
        let partial = self
            .open
            .remove(&safe)
            .ok_or_else(|| StoreError::NotFound(name.to_owned()))?;
        partial.data.sync_all().map_err(|e| io(Path::new(name), e))?;
        drop(partial);
        let (data_path, log_path) = self.partial_paths(&safe);
        fs::rename(&data_path, parent.join(file_name)).map_err(|e| io(Path::new(name), e))?;
        fs::remove_file(&log_path).map_err(|e| io(&log_path, e))
    }

    fn close_partial(&mut self, name: &str) {
        if let Ok((safe, _)) = self.path(name) {
            self.open.remove(&safe);
        }
    }

    fn discard_partial(&mut self, name: &str) -> Result<(), StoreError> {
        let (safe, _) = self.path(name)?;
        self.open.remove(&safe);
        let (data_path, log_path) = self.partial_paths(&safe);
        for path in [data_path, log_path] {
            match fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&path, e)),
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Checksum, ChecksumKind};
    use std::os::unix::fs::symlink;

    /// One range, as `open_partial` returns it.
    fn only(range: Range<u64>) -> Result<Vec<Range<u64>>, StoreError> {
        Ok(vec![range])
    }

    fn id(size: u64, tag: &[u8]) -> PartialId {
        PartialId {
            size,
            mtime: 7,
            checksum: Checksum::of(ChecksumKind::Md5, tag),
        }
    }

    /// A fresh directory under the system's temporary one, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            let path = std::env::temp_dir().join(format!("scps-saratoga-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path).unwrap();
            TempDir(path)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn partials_left_are_pruned_by_age_then_oldest_first_past_the_budget_and_open_ones_kept() {
        let tmp = TempDir::new("prune");
        let mut store = DiskStore::new(&tmp.0).unwrap();
        let write = |store: &mut DiskStore, name: &str| {
            store.open_partial(name, &id(8192, name.as_bytes())).unwrap();
            store.write_partial(name, 0, &[1; 8192]).unwrap();
        };
        let start = SystemTime::now();
        for (age, name) in [(30, "dir/old"), (20, "middle"), (10, "new")] {
            write(&mut store, name);
            store.close_partial(name);
            // Distinct times, in this order.
            let data = File::options()
                .write(true)
                .open(store.partial_paths(name).0)
                .unwrap();
            data.set_modified(start - Duration::from_millis(age)).unwrap();
        }
        write(&mut store, "open");
        let (data, _) = store.partial_paths("dir/old");
        let old_written = fs::metadata(&data).unwrap().modified().unwrap();
        let new_written = fs::metadata(store.partial_paths("new").0)
            .unwrap()
            .modified()
            .unwrap();
        // Nothing is stale and all fits: nothing goes.
        let far = 1 << 40;
        assert!(store.prune_partials(old_written, Duration::ZERO, far).is_empty());
        // Stale: only "dir/old" was written more than 5 ms before then.
        let then = old_written + Duration::from_millis(5);
        assert_eq!(
            store.prune_partials(then, Duration::from_millis(5) / 2, far),
            ["dir/old"]
        );
        assert!(!data.exists() && !data.with_extension("ranges").exists());
        // Past a budget of one partial: the older closed one goes, the
        // open one stays whatever the budget.
        assert_eq!(
            store.prune_partials(new_written, Duration::from_secs(60), 8192),
            ["middle"]
        );
        assert!(store.prune_partials(new_written, Duration::from_secs(60), 0) == ["new"]);
        store.write_partial("open", 0, b"still").unwrap();
    }

    #[test]
    fn a_root_that_is_a_file_is_refused_as_not_a_directory() {
        let tmp = TempDir::new("root-file");
        let file = tmp.0.join("plain");
        fs::write(&file, b"x").unwrap();
        let error = DiskStore::new(&file).unwrap_err();
        assert_eq!(
            error,
            StoreError::Io(format!("not a directory: {}", file.display()))
        );
        assert!(matches!(
            DiskStore::new(tmp.0.join("missing")),
            Err(StoreError::NotFound(_))
        ));
    }

    #[test]
    fn files_are_read_listed_and_deleted_inside_the_root_only() {
        let tmp = TempDir::new("serve");
        let served = tmp.0.join("served");
        fs::create_dir_all(served.join("sub")).unwrap();
        fs::write(served.join("a.txt"), b"hello").unwrap();
        fs::write(served.join("sub/b"), b"").unwrap();
        fs::write(tmp.0.join("secret"), b"outside").unwrap();
        symlink(tmp.0.join("secret"), served.join("escape")).unwrap();
        symlink(served.join("a.txt"), served.join("alias")).unwrap();
        let mut store = DiskStore::new(&served).unwrap();

        assert_eq!(store.info("a.txt").unwrap().size, 5);
        assert!(store.info("sub").unwrap().is_dir);
        let mut buf = [0; 8];
        assert_eq!(store.read_at("a.txt", 1, &mut buf), Ok(4));
        assert_eq!(&buf[..4], b"ello");
        assert_eq!(
            store.read_at("/a.txt", 0, &mut buf),
            Ok(5),
            "absolute means from the root"
        );
        assert_eq!(
            store.read_at("alias", 0, &mut buf),
            Ok(5),
            "a link inside is followed"
        );

        assert!(matches!(
            store.read_at("escape", 0, &mut buf),
            Err(StoreError::Denied(_))
        ));
        assert!(matches!(store.info("../secret"), Err(StoreError::Denied(_))));
        assert!(matches!(
            store.info("sub/../../secret"),
            Err(StoreError::Denied(_))
        ));
        assert!(matches!(store.delete("escape"), Err(StoreError::Denied(_))));
        assert!(matches!(
            store.info(".saratoga/partial"),
            Err(StoreError::Denied(_))
        ));
        assert!(matches!(store.info("nope"), Err(StoreError::NotFound(_))));

        store.open_partial("new", &id(1, b"")).unwrap();
        let names: Vec<String> = store.list("").unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["a.txt", "sub"], "no links, no partial files");
        assert!(matches!(store.delete("sub"), Err(StoreError::Denied(_))));
        store.delete("sub/b").unwrap();
        assert!(store.list("sub").unwrap().is_empty());
        assert!(tmp.0.join("secret").exists());
    }

    #[test]
    fn links_lead_neither_out_of_the_root_nor_into_the_partials() {
        let tmp = TempDir::new("links");
        let served = tmp.0.join("served");
        let outside = tmp.0.join("outside");
        fs::create_dir_all(&served).unwrap();
        fs::create_dir_all(&outside).unwrap();
        symlink(&outside, served.join("out")).unwrap();
        symlink(served.join(PARTIAL_DIR), served.join("peek")).unwrap();
        let mut store = DiskStore::new(&served).unwrap();
        let f = id(1, b"f");
        store.open_partial("out/new/f", &f).unwrap();
        store.write_partial("out/new/f", 0, b"x").unwrap();
        assert!(matches!(store.commit("out/new/f"), Err(StoreError::Denied(_))));
        assert!(!outside.join("new").exists(), "nothing created outside");
        // Through a link to the partials: nothing read, listed or made.
        store.open_partial("g", &f).unwrap();
        let mut buf = [0; 8];
        assert!(matches!(store.list("peek/partial"), Err(StoreError::Denied(_))));
        assert!(matches!(
            store.read_at("peek/partial/g.data", 0, &mut buf),
            Err(StoreError::Denied(_))
        ));
        assert!(matches!(
            store.delete("peek/partial/g.ranges"),
            Err(StoreError::Denied(_))
        ));
        store.open_partial("peek/h", &f).unwrap();
        store.write_partial("peek/h", 0, b"x").unwrap();
        assert!(matches!(store.commit("peek/h"), Err(StoreError::Denied(_))));
        // A link inside the root is still followed, new directories made.
        fs::create_dir_all(served.join("real")).unwrap();
        symlink(served.join("real"), served.join("alias")).unwrap();
        store.open_partial("alias/sub/k", &f).unwrap();
        store.write_partial("alias/sub/k", 0, b"k").unwrap();
        store.commit("alias/sub/k").unwrap();
        assert_eq!(fs::read(served.join("real/sub/k")).unwrap(), b"k");
    }

    #[test]
    fn a_partial_file_survives_a_restart_and_appears_when_committed() {
        let tmp = TempDir::new("partial");
        let mut store = DiskStore::new(&tmp.0).unwrap();
        let f = id(10, b"f");
        assert_eq!(store.open_partial("in/f.bin", &f), Ok(vec![]));
        store.write_partial("in/f.bin", 0, b"0123").unwrap();
        store.write_partial("in/f.bin", 6, b"6789").unwrap();
        assert!(matches!(
            store.write_partial("in/f.bin", 8, b"xyz"),
            Err(StoreError::TooBig(_))
        ));
        assert!(matches!(store.info("in/f.bin"), Err(StoreError::NotFound(_))));
        drop(store);

        let mut store = DiskStore::new(&tmp.0).unwrap();
        let resumed = store.open_partial("in/f.bin", &f).unwrap();
        assert_eq!(resumed.len(), 2);
        assert_eq!((resumed[0].clone(), resumed[1].clone()), (0..4, 6..10));
        store.write_partial("in/f.bin", 4, b"45").unwrap();
        let mut buf = [0; 10];
        assert_eq!(store.read_partial("in/f.bin", 0, &mut buf), Ok(10));
        assert_eq!(&buf, b"0123456789");
        store.commit("in/f.bin").unwrap();
        assert_eq!(fs::read(tmp.0.join("in/f.bin")).unwrap(), b"0123456789");
        assert!(
            fs::read_dir(tmp.0.join(PARTIAL_DIR).join("partial"))
                .unwrap()
                .next()
                .is_none()
        );

        // Another file of that name starts afresh, even of the same size;
        // so does one without a checksum; a discarded partial is gone.
        let g = id(4, b"g");
        let no_checksum = PartialId {
            checksum: Checksum::None,
            ..g
        };
        for other in [id(5, b"g"), id(4, b"h"), PartialId { mtime: 9, ..g }, no_checksum] {
            store.open_partial("g", &g).unwrap();
            store.write_partial("g", 0, b"ab").unwrap();
            drop(store);
            store = DiskStore::new(&tmp.0).unwrap();
            assert_eq!(store.open_partial("g", &g), only(0..2), "after a restart");
            assert_eq!(store.open_partial("g", &other), Ok(vec![]), "{other:?}");
            store.write_partial("g", 2, b"cd").unwrap();
            let kept = if other.checksum == Checksum::None {
                Ok(vec![])
            } else {
                only(2..4)
            };
            assert_eq!(store.open_partial("g", &other), kept);
        }
        store.discard_partial("g").unwrap();
        assert!(matches!(
            store.read_partial("g", 0, &mut buf),
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(
            store.open_partial("../g", &g),
            Err(StoreError::Denied(_))
        ));
        assert!(matches!(store.open_partial("", &g), Err(StoreError::Denied(_))));
    }
}
