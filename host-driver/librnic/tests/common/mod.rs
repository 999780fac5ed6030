//! What librnic's test files share: a directory that puts the librnic cargo built for this
//! run on `LD_LIBRARY_PATH`.
use std::path::PathBuf;

/// `CARGO_TARGET_TMPDIR/librnic-lib-<pid>-<tag>` holding `libibverbs.so.1` and
/// `librdmacm.so.1`, both links to the `deps/libibverbs.so` cargo built for this test run.
/// One object under both names: the loader maps it once, so the CM and the verbs share one
/// driver state. Tests running in parallel threads pass different tags (two replacing the
/// same link raced, EEXIST).
pub fn librnic_dir(tag: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let so = exe.parent().expect("target/<profile>/deps").join("libibverbs.so");
    assert!(so.exists(), "{} not built", so.display());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("librnic-lib-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["libibverbs.so.1", "librdmacm.so.1"] {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&so, &link).unwrap();
    }
    dir
}
