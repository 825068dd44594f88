const _: () = {
    fn __pk_index_value(
        member: &str,
        field: &str,
    ) -> ::redis_entity::__private::core::option::Option<
        ::redis_entity::__private::Vec<u8>,
    > {
        #[allow(unused_variables)]
        let pk = <Account as ::redis_entity::__private::Entity>::read_member(member)?;
        #[allow(unused_variables)]
        let pk = &pk;
        let __p0 = pk;
        match field {
            _ => ::redis_entity::__private::core::option::Option::None,
        }
    }
    impl ::redis_entity::__private::Derived for Account {}
    impl ::redis_entity::__private::Entity for Account {
        type Pk = u64;
        const DESC: &'static ::redis_entity::__private::EntityDesc = {
            static DESC: ::redis_entity::__private::EntityDesc = ::redis_entity::__private::EntityDesc {
                type_name: "Account",
                prefix: "account",
                layout: ::redis_entity::__private::Layout::Hash,
                key_pattern: "account:{<id>}",
                key_head: "account:",
                key_tail: "",
                pk_fields: &["id"],
                numeric_pk: true,
                columns: &[
                    ::redis_entity::__private::ColumnDesc {
                        name: "balance",
                        rust_type: "i64",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Text,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                    ::redis_entity::__private::ColumnDesc {
                        name: "version",
                        rust_type: "u64",
                        optional: false,
                        ttl: ::redis_entity::__private::core::option::Option::None,
                        form: ::redis_entity::__private::ColumnForm::Text,
                        alias: ::redis_entity::__private::core::option::Option::None,
                    },
                ],
                maps: &[],
                indexes: &[],
                version: ::redis_entity::__private::core::option::Option::Some(1usize),
                pk_index_value: __pk_index_value,
                ttl: ::redis_entity::__private::core::option::Option::None,
                shards: ::redis_entity::__private::DEFAULT_SHARDS,
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
                        i64,
                    >>::encode("balance", &self.balance)?,
                    <::redis_entity::__private::Plain as ::redis_entity::__private::FieldCodec<
                        u64,
                    >>::encode("version", &self.version)?,
                ]),
                maps: ::redis_entity::__private::Vec::from([]),
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
                i64,
            >>::decode_owned("balance", ::redis_entity::__private::take(&mut __cols))?;
            let __c1 = <::redis_entity::__private::Plain as ::redis_entity::__private::FieldCodec<
                u64,
            >>::decode_owned("version", ::redis_entity::__private::take(&mut __cols))?;
            let __p0 = pk;
            ::redis_entity::__private::core::result::Result::Ok(Account {
                id: ::redis_entity::__private::core::clone::Clone::clone(__p0),
                balance: __c0,
                version: __c1,
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
const Account: () = {
    pub struct balance;
    pub struct version;
    impl ::redis_entity::__private::FieldMarker<1> for Account {
        type Marker = balance;
    }
    impl ::redis_entity::__private::FieldMarker<2> for Account {
        type Marker = version;
    }
    const _: () = {
        struct balance;
        struct version;
    };
};
#[allow(dead_code)]
impl Account {
    ///Handle of the `balance` field (stored as `balance`).
    const BALANCE: ::redis_entity::__private::Field<
        Account,
        i64,
        ::redis_entity::__private::Plain,
        ::redis_entity::__private::NoIndex,
        <Account as ::redis_entity::__private::FieldMarker<1>>::Marker,
    > = ::redis_entity::__private::Field::new("balance", 0usize);
    ///Handle of the `version` field (stored as `version`).
    const VERSION: ::redis_entity::__private::Field<
        Account,
        u64,
        ::redis_entity::__private::Plain,
        ::redis_entity::__private::NoIndex,
        <Account as ::redis_entity::__private::FieldMarker<2>>::Marker,
    > = ::redis_entity::__private::Field::new("version", 1usize);
    ///The entity key for `pk`, without namespace: `account:{<id>}`.
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
