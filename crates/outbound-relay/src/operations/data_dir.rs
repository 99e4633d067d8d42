//! `data_dir` holds what must stay the relay's own: the spool (every event's body), the
//! admin API's store (shared secrets, forward write keys, header values) and audience state.
//! The process makes its files readable by its own user only (umask 077), the directory is
//! 0700, and what an earlier version left more open is closed at start.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Sets the process's umask to 077 and makes `data_dir` (created if missing) 0700 and
/// everything in it 0700 (directories) or 0600 (files). Returns how many were tightened.
pub fn secure(data_dir: &Path) -> std::io::Result<usize> {
    // SAFETY: umask only sets the process's file mode mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
    std::fs::create_dir_all(data_dir)?;
    tighten(data_dir)
}

fn tighten(path: &Path) -> std::io::Result<usize> {
    let meta = std::fs::symlink_metadata(path)?;
    // A link is not followed: what it points at is not data_dir's.
    if meta.file_type().is_symlink() {
        return Ok(0);
    }
    let want = if meta.is_dir() { 0o700 } else { 0o600 };
    let mut changed = 0;
    if meta.permissions().mode() & 0o777 != want {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(want))?;
        changed += 1;
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            changed += tighten(&entry?.path())?;
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_dir_and_what_it_holds_become_the_processs_own() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("spool")).unwrap();
        std::fs::write(data.join("control.db"), b"x").unwrap();
        std::fs::write(data.join("spool/spool.db"), b"x").unwrap();
        for (p, mode) in [("", 0o755), ("spool", 0o755), ("control.db", 0o644)] {
            let p = data.join(p);
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        assert_eq!(secure(&data).unwrap(), 4);
        let mode = |p: &str| {
            std::fs::metadata(data.join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(
            [
                mode(""),
                mode("spool"),
                mode("control.db"),
                mode("spool/spool.db")
            ],
            [0o700, 0o700, 0o600, 0o600]
        );
        // New files follow the umask.
        std::fs::write(data.join("new"), b"x").unwrap();
        assert_eq!(mode("new"), 0o600);
        assert_eq!(secure(&data).unwrap(), 0);
    }
}
