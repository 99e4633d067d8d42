//! Gives liboutbound.so its SONAME (see "Versions and the ABI" in docs/c.md): programs
//! linked against 0.1.x ask the loader for liboutbound.so.0.1, which any later 0.1.y
//! satisfies; 0.2 (or 1.0) changes the name, so an incompatible library is never picked up.

fn main() {
    let major = env("CARGO_PKG_VERSION_MAJOR");
    let minor = env("CARGO_PKG_VERSION_MINOR");
    // Cargo's rule for what is compatible: the major version, or 0.minor before 1.0.
    let series = if major == "0" {
        format!("0.{minor}")
    } else {
        major
    };
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os.ends_with("bsd") || os == "android" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liboutbound.so.{series}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name} for build scripts"))
}
