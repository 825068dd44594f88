//! The schema: what the derive knows about an entity, written down once.
//!
//! - [`entity`]: the [`crate::Entity`] trait and the static description
//!   (columns, maps, index kinds) every plan is built from;
//! - [`field`]: typed field handles (`User::USERNAME`) and the index-kind
//!   markers that make a query on an unindexed field fail to compile;
//! - [`codec`]: how field values become bytes in Redis and back;
//! - [`escape`]: how values become key segments, injectively;
//! - [`update_op`]: the changes an `update()` is made of;
//! - [`condition`]: what a conditional write requires of stored values;
//! - [`definition`]: a type's definition as the keyspace records it, its
//!   fingerprint, and how two definitions differ.

pub mod codec;
pub(crate) mod condition;
pub mod definition;
pub mod entity;
pub mod escape;
pub mod field;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod pk;
pub mod update_op;
