//! Holds no code: its dependencies' features unify the workspace's builds (see its Cargo.toml).
