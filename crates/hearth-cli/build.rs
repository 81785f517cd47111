//! Sets `HEARTH_COMMIT` (the commit this binary was built from).

include!("../../build/commit.rs");

fn main() {
    emit_commit();
}
