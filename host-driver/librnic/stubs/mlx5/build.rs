//! libmlx5.so.1 with the MLX5_1.x version nodes perftest 4.5 binds to.
#[path = "../build-common.rs"]
mod common;

fn main() {
    let v: Vec<String> = (0..=21).map(|i| format!("MLX5_1.{i}")).collect();
    let v: Vec<&str> = v.iter().map(String::as_str).collect();
    common::link("libmlx5.so.1", &v);
}
