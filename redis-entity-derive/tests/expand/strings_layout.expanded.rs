const _: () = {
    fn __pk_index_value(
        member: &str,
        field: &str,
    ) -> ::redis_entity::__private::core::option::Option<
        ::redis_entity::__private::Vec<u8>,
    > {
        #[allow(unused_variables)]
        let pk = <Session as ::redis_entity::__private::Entity>::read_member(member)?;
        #[allow(unused_variables)]
        let pk = &pk;
        let __p0 = pk;
        match field {
            _ => ::redis_entity::__private::core::option::Option::None,
        }
    }
    impl ::redis_entity::__private::Derived for Session {}
    impl ::redis_entity::__private::Entity for Session {
        type Pk = u32;
        const DESC: &'static ::redis_entity::__private::EntityDesc = {
            static DESC: ::redis_entity::__private::EntityDesc = ::redis_entity::__private::EntityDesc {
                type_name: "Session",
                prefix: "session",
                layout: ::redis_entity::__private::Layout::Strings,
                key_pattern: "session:id:{<id>}",
                key_head: "session:id:",
                key_tail: "",
                pk_fields: &["id"],
                numeric_pk: true,
                columns: &[
                    ::redis_entity::__private::ColumnDesc {
                        name: "user",
                        rust_type: "String",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Text,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "code",
                        rust_type: "Option<String>",
                        optional: true,
                        ttl: ::redis_entity::__private::core::option::Option::Some(
                            60u64,
                        ),
                        form: ::redis_entity::__private::ColumnForm::Text,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                ],
                maps: &[
                    ::redis_entity::__private::MapDesc {
                        name: "flags",
                        rust_type: "HashMap<String, String>",
                    },
                ],
                indexes: &[],
                version: ::redis_entity::__private::core::option::Option::None,
                pk_index_value: __pk_index_value,
                ttl: ::redis_entity::__private::core::option::Option::Some(3600u64),
                shards: ::redis_entity::__private::DEFAULT_SHARDS,
                group: ::redis_entity::__private::core::option::Option::None,
            };
            &DESC
        };
        const SCHEMA: u64 = ::redis_entity::__private::fingerprint(Self::DESC);
        fn write_member(pk: &Self::Pk, out: &mut ::redis_entity::__private::String) {
            let __p0 = pk;
            ::redis_entity::__private::PaddedKeyPart::write_padded(__p0, out, 8usize);
        }
        fn write_own_member(&self, out: &mut ::redis_entity::__private::String) {
            let __p0 = &self.id;
            ::redis_entity::__private::PaddedKeyPart::write_padded(__p0, out, 8usize);
        }
        fn read_member(
            member: &str,
        ) -> ::redis_entity::__private::core::option::Option<Self::Pk> {
            let __rest: &str = member;
            let (__seg, __rest) = (__rest, "");
            let __r0 = ::redis_entity::__private::PaddedKeyPart::read_padded(
                __seg,
                8usize,
            )?;
            ::redis_entity::__private::core::option::Option::Some(__r0)
        }
        fn to_row(
            &self,
        ) -> ::redis_entity::__private::Result<::redis_entity::__private::Row> {
            ::redis_entity::__private::core::result::Result::Ok(::redis_entity::__private::Row {
                columns: ::redis_entity::__private::Vec::from([
                    <::redis_entity::__private::Plain as ::redis_entity::__private::FieldCodec<
                        String,
                    >>::encode("user", &self.user)?,
                    <::redis_entity::__private::Optional as ::redis_entity::__private::FieldCodec<
                        Option<String>,
                    >>::encode("code", &self.code)?,
                ]),
                maps: ::redis_entity::__private::Vec::from([
                    ::redis_entity::__private::MapField::encode_entries(&self.flags),
                ]),
            })
        }
        fn from_row(
            pk: &Self::Pk,
            row: ::redis_entity::__private::Row,
        ) -> ::redis_entity::__private::core::result::Result<
            Self,
            ::redis_entity::__private::FieldError,
        > {
            let mut __cols = row.columns.into_iter();
            let mut __maps = row.maps.into_iter();
            let __c0 = <::redis_entity::__private::Plain as ::redis_entity::__private::FieldCodec<
                String,
            >>::decode_owned("user", ::redis_entity::__private::take(&mut __cols))?;
            let __c1 = <::redis_entity::__private::Optional as ::redis_entity::__private::FieldCodec<
                Option<String>,
            >>::decode_owned("code", ::redis_entity::__private::take(&mut __cols))?;
            let __m0 = ::redis_entity::__private::decode_map::<
                HashMap<String, String>,
            >("flags", __maps.next().unwrap_or_default())?;
            let __p0 = pk;
            ::redis_entity::__private::core::result::Result::Ok(Session {
                id: ::redis_entity::__private::core::clone::Clone::clone(__p0),
                user: __c0,
                code: __c1,
                flags: __m0,
            })
        }
    }
};
#[doc(hidden)]
#[allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_local_definitions,
    dead_code,
    unreachable_pub,
    unnameable_types
)]
const Session: () = {
    pub struct user;
    pub struct code;
    impl ::redis_entity::__private::FieldMarker<1> for Session {
        type Marker = user;
    }
    impl ::redis_entity::__private::FieldMarker<2> for Session {
        type Marker = code;
    }
    const _: () = {
        struct user;
        struct code;
    };
};
#[allow(dead_code)]
impl Session {
    ///Handle of the `user` field (stored as `user`).
    pub const USER: ::redis_entity::__private::Field<
        Session,
        String,
        ::redis_entity::__private::Plain,
        ::redis_entity::__private::NoIndex,
        <Session as ::redis_entity::__private::FieldMarker<1>>::Marker,
    > = ::redis_entity::__private::Field::new("user", 0usize);
    ///Handle of the `code` field (stored as `code`).
    pub const CODE: ::redis_entity::__private::Field<
        Session,
        Option<String>,
        ::redis_entity::__private::Optional,
        ::redis_entity::__private::NoIndex,
        <Session as ::redis_entity::__private::FieldMarker<2>>::Marker,
    > = ::redis_entity::__private::Field::new("code", 1usize);
    ///Handle of the `#[hash]` field `flags` (its own hash at `<key>:flags`).
    pub const FLAGS: ::redis_entity::__private::HashField<
        Session,
        HashMap<String, String>,
    > = ::redis_entity::__private::HashField::new("flags", 0usize);
    ///The entity key for `pk`, without namespace: `session:id:{<id>}`.
    pub fn key(
        pk: &<Self as ::redis_entity::__private::Entity>::Pk,
    ) -> ::redis_entity::__private::String {
        ::redis_entity::__private::entity_key::<Self>(pk)
    }
    /// Every key family of this entity with its Redis type.
    pub fn layout() -> ::redis_entity::__private::EntityLayout {
        ::redis_entity::__private::EntityLayout::of(
            <Self as ::redis_entity::__private::Entity>::DESC,
        )
    }
}
