//! A small tmpfs a test can fill: a real "No space left on device" for
//! SQLite, mounted under `target/` and unmounted on drop. Mounting needs
//! root (CI has it); without it the test fails and says so, never skips.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A mounted tmpfs of a few MiB.
pub struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `mib` MiB.
    ///
    /// # Panics
    /// When it cannot be mounted, saying why and how to run the test.
    pub fn mount(mib: u32) -> Self {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/storage-faults")
            .join(format!("tmpfs-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(&dir).expect("make the mount point");
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(&dir)
            .output()
            .expect("run mount");
        assert!(
            output.status.success(),
            "the disk-full test mounts a {mib} MiB tmpfs to fill, which needs root (CI runs \
             as root): {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Self { dir }
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Fills what is left with a file, to the last byte.
    pub fn fill(&self) {
        let mut filler = std::fs::File::create(self.filler()).expect("make the filler");
        let block = vec![0u8; 64 * 1024];
        loop {
            match filler.write(&block) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        // Whatever a smaller write can still take.
        while let Ok(n) = filler.write(&block[..512]) {
            if n == 0 {
                break;
            }
        }
    }

    /// Frees the space [`Tmpfs::fill`] took.
    pub fn free(&self) {
        std::fs::remove_file(self.filler()).expect("remove the filler");
    }

    fn filler(&self) -> PathBuf {
        self.dir.join("filler")
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
