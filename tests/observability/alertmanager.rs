//! (placeholder: being written)

#[allow(unused_imports)]
use super::*;
