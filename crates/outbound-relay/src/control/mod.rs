//! The control plane: the admin API under `/admin/`.

pub mod admin;
