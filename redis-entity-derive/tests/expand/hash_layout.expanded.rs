const _: () = {
    fn __pk_index_value(
        member: &str,
        field: &str,
    ) -> ::redis_entity::__private::core::option::Option<
        ::redis_entity::__private::Vec<u8>,
    > {
        #[allow(unused_variables)]
        let pk = <User as ::redis_entity::__private::Entity>::read_member(member)?;
        #[allow(unused_variables)]
        let pk = &pk;
        let __p0 = pk;
        match field {
            _ => ::redis_entity::__private::core::option::Option::None,
        }
    }
    impl ::redis_entity::__private::Derived for User {}
    impl ::redis_entity::__private::Entity for User {
        type Pk = u64;
        const DESC: &'static ::redis_entity::__private::EntityDesc = {
            static DESC: ::redis_entity::__private::EntityDesc = ::redis_entity::__private::EntityDesc {
                type_name: "User",
                prefix: "user",
                layout: ::redis_entity::__private::Layout::Hash,
                key_pattern: "user:{<id>}",
                key_head: "user:",
                key_tail: "",
                pk_fields: &["id"],
                numeric_pk: true,
                columns: &[
                    ::redis_entity::__private::ColumnDesc {
                        name: "username",
                        rust_type: "String",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Text,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "country",
                        rust_type: "String",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Text,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "level",
                        rust_type: "i64",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Text,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "born",
                        rust_type: "Option<u32>",
                        optional: true,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Text,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "name",
                        rust_type: "String",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Text,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "tags",
                        rust_type: "BTreeSet<String>",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Tags,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "mail",
                        rust_type: "Option<String>",
                        optional: true,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Text,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "extra",
                        rust_type: "Vec<u8>",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Json,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "score",
                        rust_type: "u32",
                        optional: true,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Text,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                ],
                maps: &[
                    ::redis_entity::__private::MapDesc {
                        name: "settings",
                        rust_type: "BTreeMap<String, String>",
                    },
                ],
                indexes: &[
                    ::redis_entity::__private::IndexDesc {
                        field: "username",
                        source: ::redis_entity::__private::IndexSource::Column(0usize),
                        kind: ::redis_entity::__private::IndexKind::Unique,
                        score: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::IndexDesc {
                        field: "country",
                        source: ::redis_entity::__private::IndexSource::Column(1usize),
                        kind: ::redis_entity::__private::IndexKind::Equality,
                        score: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::IndexDesc {
                        field: "level",
                        source: ::redis_entity::__private::IndexSource::Column(2usize),
                        kind: ::redis_entity::__private::IndexKind::Sorted,
                        score: ::redis_entity::__private::core::option::Option::Some(
                            <i64 as ::redis_entity::__private::SortScore>::score_of,
                        ),
                    },
                    ::redis_entity::__private::IndexDesc {
                        field: "born",
                        source: ::redis_entity::__private::IndexSource::Column(3usize),
                        kind: ::redis_entity::__private::IndexKind::Sorted,
                        score: ::redis_entity::__private::core::option::Option::Some(
                            <u32 as ::redis_entity::__private::SortScore>::score_of,
                        ),
                    },
                    ::redis_entity::__private::IndexDesc {
                        field: "name",
                        source: ::redis_entity::__private::IndexSource::Column(4usize),
                        kind: ::redis_entity::__private::IndexKind::Prefix,
                        score: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::IndexDesc {
                        field: "tags",
                        source: ::redis_entity::__private::IndexSource::Column(5usize),
                        kind: ::redis_entity::__private::IndexKind::Tags,
                        score: ::redis_entity::__private::core::option::Option::None,
                    },
                ],
                version: ::redis_entity::__private::core::option::Option::None,
                pk_index_value: __pk_index_value,
                ttl: ::redis_entity::__private::core::option::Option::None,
                shards: 1u16,
                group: ::redis_entity::__private::core::option::Option::None,
            };
            &DESC
        };
        const SCHEMA: u64 = ::redis_entity::__private::fingerprint(Self::DESC);
        fn write_member(pk: &Self::Pk, out: &mut ::redis_entity::__private::String) {
            let __p0 = pk;
            ::redis_entity::__private::KeyPart::write_key(__p0, out, "@");
        }
        fn write_own_member(&self, out: &mut ::redis_entity::__private::String) {
            let __p0 = &self.id;
            ::redis_entity::__private::KeyPart::write_key(__p0, out, "@");
        }
        fn read_member(
            member: &str,
        ) -> ::redis_entity::__private::core::option::Option<Self::Pk> {
            let __rest: &str = member;
            let (__seg, __rest) = (__rest, "");
            let __r0 = ::redis_entity::__private::KeyPart::read_key(__seg, "@")?;
            ::redis_entity::__private::core::option::Option::Some(__r0)
        }
        fn to_row(
            &self,
        ) -> ::redis_entity::__private::Result<::redis_entity::__private::Row> {
            ::redis_entity::__private::core::result::Result::Ok(::redis_entity::__private::Row {
                columns: ::redis_entity::__private::Vec::from([
                    <::redis_entity::__private::Plain as ::redis_entity::__private::FieldCodec<
                        String,
                    >>::encode("username", &self.username)?,
                    <::redis_entity::__private::Plain as ::redis_entity::__private::FieldCodec<
                        String,
                    >>::encode("country", &self.country)?,
                    <::redis_entity::__private::Plain as ::redis_entity::__private::FieldCodec<
                        i64,
                    >>::encode("level", &self.level)?,
                    <::redis_entity::__private::Optional as ::redis_entity::__private::FieldCodec<
                        Option<u32>,
                    >>::encode("born", &self.born)?,
                    <::redis_entity::__private::Plain as ::redis_entity::__private::FieldCodec<
                        String,
                    >>::encode("name", &self.name)?,
                    <::redis_entity::__private::TagList as ::redis_entity::__private::FieldCodec<
                        BTreeSet<String>,
                    >>::encode("tags", &self.tags)?,
                    <::redis_entity::__private::Optional as ::redis_entity::__private::FieldCodec<
                        Option<String>,
                    >>::encode("mail", &self.email)?,
                    <::redis_entity::__private::Json as ::redis_entity::__private::FieldCodec<
                        Vec<u8>,
                    >>::encode("extra", &self.extra)?,
                    <::redis_entity::__private::Defaulted<
                        ::redis_entity::__private::Plain,
                    > as ::redis_entity::__private::FieldCodec<
                        u32,
                    >>::encode("score", &self.score)?,
                ]),
                maps: ::redis_entity::__private::Vec::from([
                    ::redis_entity::__private::MapField::encode_entries(&self.settings),
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
            >>::decode_owned("username", ::redis_entity::__private::take(&mut __cols))?;
            let __c1 = <::redis_entity::__private::Plain as ::redis_entity::__private::FieldCodec<
                String,
            >>::decode_owned("country", ::redis_entity::__private::take(&mut __cols))?;
            let __c2 = <::redis_entity::__private::Plain as ::redis_entity::__private::FieldCodec<
                i64,
            >>::decode_owned("level", ::redis_entity::__private::take(&mut __cols))?;
            let __c3 = <::redis_entity::__private::Optional as ::redis_entity::__private::FieldCodec<
                Option<u32>,
            >>::decode_owned("born", ::redis_entity::__private::take(&mut __cols))?;
            let __c4 = <::redis_entity::__private::Plain as ::redis_entity::__private::FieldCodec<
                String,
            >>::decode_owned("name", ::redis_entity::__private::take(&mut __cols))?;
            let __c5 = <::redis_entity::__private::TagList as ::redis_entity::__private::FieldCodec<
                BTreeSet<String>,
            >>::decode_owned("tags", ::redis_entity::__private::take(&mut __cols))?;
            let __c6 = <::redis_entity::__private::Optional as ::redis_entity::__private::FieldCodec<
                Option<String>,
            >>::decode_owned("mail", ::redis_entity::__private::take(&mut __cols))?;
            let __c7 = <::redis_entity::__private::Json as ::redis_entity::__private::FieldCodec<
                Vec<u8>,
            >>::decode_owned("extra", ::redis_entity::__private::take(&mut __cols))?;
            let __c8 = <::redis_entity::__private::Defaulted<
                ::redis_entity::__private::Plain,
            > as ::redis_entity::__private::FieldCodec<
                u32,
            >>::decode_owned("score", ::redis_entity::__private::take(&mut __cols))?;
            let __m0 = ::redis_entity::__private::decode_map::<
                BTreeMap<String, String>,
            >("settings", __maps.next().unwrap_or_default())?;
            let __p0 = pk;
            ::redis_entity::__private::core::result::Result::Ok(User {
                id: ::redis_entity::__private::core::clone::Clone::clone(__p0),
                username: __c0,
                country: __c1,
                level: __c2,
                born: __c3,
                name: __c4,
                tags: __c5,
                email: __c6,
                extra: __c7,
                score: __c8,
                settings: __m0,
                cache: ::redis_entity::__private::core::default::Default::default(),
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
const User: () = {
    pub struct username;
    pub struct country;
    pub struct level;
    pub struct born;
    pub struct name;
    pub struct tags;
    pub struct email;
    pub struct extra;
    pub struct score;
    impl ::redis_entity::__private::FieldMarker<1> for User {
        type Marker = username;
    }
    impl ::redis_entity::__private::FieldMarker<2> for User {
        type Marker = country;
    }
    impl ::redis_entity::__private::FieldMarker<3> for User {
        type Marker = level;
    }
    impl ::redis_entity::__private::FieldMarker<4> for User {
        type Marker = born;
    }
    impl ::redis_entity::__private::FieldMarker<5> for User {
        type Marker = name;
    }
    impl ::redis_entity::__private::FieldMarker<6> for User {
        type Marker = tags;
    }
    impl ::redis_entity::__private::FieldMarker<7> for User {
        type Marker = email;
    }
    impl ::redis_entity::__private::FieldMarker<8> for User {
        type Marker = extra;
    }
    impl ::redis_entity::__private::FieldMarker<9> for User {
        type Marker = score;
    }
    const _: () = {
        struct username;
        struct country;
        struct level;
        struct born;
        struct name;
        struct tags;
        struct email;
        struct extra;
        struct score;
    };
};
#[allow(dead_code)]
impl User {
    ///Handle of the `username` field (stored as `username`).
    const USERNAME: ::redis_entity::__private::Field<
        User,
        String,
        ::redis_entity::__private::Plain,
        ::redis_entity::__private::Unique<String>,
        <User as ::redis_entity::__private::FieldMarker<1>>::Marker,
    > = ::redis_entity::__private::Field::new("username", 0usize);
    ///Handle of the `country` field (stored as `country`).
    const COUNTRY: ::redis_entity::__private::Field<
        User,
        String,
        ::redis_entity::__private::Plain,
        ::redis_entity::__private::Equality<String>,
        <User as ::redis_entity::__private::FieldMarker<2>>::Marker,
    > = ::redis_entity::__private::Field::new("country", 1usize);
    ///Handle of the `level` field (stored as `level`).
    const LEVEL: ::redis_entity::__private::Field<
        User,
        i64,
        ::redis_entity::__private::Plain,
        ::redis_entity::__private::Sorted<i64>,
        <User as ::redis_entity::__private::FieldMarker<3>>::Marker,
    > = ::redis_entity::__private::Field::new("level", 2usize);
    ///Handle of the `born` field (stored as `born`).
    const BORN: ::redis_entity::__private::Field<
        User,
        Option<u32>,
        ::redis_entity::__private::Optional,
        ::redis_entity::__private::Sorted<u32>,
        <User as ::redis_entity::__private::FieldMarker<4>>::Marker,
    > = ::redis_entity::__private::Field::new("born", 3usize);
    ///Handle of the `name` field (stored as `name`).
    const NAME: ::redis_entity::__private::Field<
        User,
        String,
        ::redis_entity::__private::Plain,
        ::redis_entity::__private::Prefix<String>,
        <User as ::redis_entity::__private::FieldMarker<5>>::Marker,
    > = ::redis_entity::__private::Field::new("name", 4usize);
    ///Handle of the `tags` field (stored as `tags`).
    const TAGS: ::redis_entity::__private::Field<
        User,
        BTreeSet<String>,
        ::redis_entity::__private::TagList,
        ::redis_entity::__private::Tags<String>,
        <User as ::redis_entity::__private::FieldMarker<6>>::Marker,
    > = ::redis_entity::__private::Field::new("tags", 5usize);
    ///Handle of the `email` field (stored as `mail`).
    const EMAIL: ::redis_entity::__private::Field<
        User,
        Option<String>,
        ::redis_entity::__private::Optional,
        ::redis_entity::__private::NoIndex,
        <User as ::redis_entity::__private::FieldMarker<7>>::Marker,
    > = ::redis_entity::__private::Field::new("mail", 6usize);
    ///Handle of the `extra` field (stored as `extra`).
    const EXTRA: ::redis_entity::__private::Field<
        User,
        Vec<u8>,
        ::redis_entity::__private::Json,
        ::redis_entity::__private::NoIndex,
        <User as ::redis_entity::__private::FieldMarker<8>>::Marker,
    > = ::redis_entity::__private::Field::new("extra", 7usize);
    ///Handle of the `score` field (stored as `score`).
    const SCORE: ::redis_entity::__private::Field<
        User,
        u32,
        ::redis_entity::__private::Defaulted<::redis_entity::__private::Plain>,
        ::redis_entity::__private::NoIndex,
        <User as ::redis_entity::__private::FieldMarker<9>>::Marker,
    > = ::redis_entity::__private::Field::new("score", 8usize);
    ///Handle of the `#[hash]` field `settings` (its own hash at `<key>:settings`).
    const SETTINGS: ::redis_entity::__private::HashField<
        User,
        BTreeMap<String, String>,
    > = ::redis_entity::__private::HashField::new("settings", 0usize);
    ///The entity key for `pk`, without namespace: `user:{<id>}`.
    fn key(
        pk: &<Self as ::redis_entity::__private::Entity>::Pk,
    ) -> ::redis_entity::__private::String {
        ::redis_entity::__private::entity_key::<Self>(pk)
    }
    /// Every key family of this entity with its Redis type.
    fn layout() -> ::redis_entity::__private::EntityLayout {
        ::redis_entity::__private::EntityLayout::of(
            <Self as ::redis_entity::__private::Entity>::DESC,
        )
    }
}
