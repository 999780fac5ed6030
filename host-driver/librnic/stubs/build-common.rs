//! Shared by the stub providers' build scripts: soname and version nodes.
pub fn link(soname: &str, versions: &[&str]) {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let mut map = String::new();
    let mut prev: Option<&str> = None;
    for v in versions {
        map.push_str(&format!("{v} {{ }}"));
        match prev {
            Some(p) => map.push_str(&format!(" {p};\n")),
            None => map.push_str(";\n"),
        }
        prev = Some(v);
    }
    let path = out.join("stub.map");
    std::fs::write(&path, map).expect("write the version script");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", path.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
}
