//! Pk arguments in the form they are at hand: a `&str` for a `String` pk,
//! owned or borrowed values, tuples of borrowed parts for composite pks.
//! Runs on one server, and with `REDIS_ENTITY_TEST_CLUSTER` set on a
//! 3-master cluster (`Shipment`, without indexes, at `shipment:{EU_7}`).

use redis_entity::relation::Relation;
use redis_entity::RedisEntity;
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
struct Product {
    #[pk]
    sku: String,
    #[index]
    category: String,
    price: u32,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(key = "shipment:{region}_{id}")]
struct Shipment {
    #[pk]
    region: String,
    #[pk]
    id: u64,
    weight: u32,
}

const BUNDLED_WITH: Relation<Product, Product> = Relation::many_to_many("bundled", "bundled_in");

fn product(sku: &str, price: u32) -> Product {
    Product {
        sku: sku.into(),
        category: "tools".into(),
        price,
    }
}

#[tokio::test]
async fn string_pks_are_accepted_as_str_owned_and_borrowed() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&product("SKU-1", 10)).await.unwrap();
    store.save(&product("SKU-2", 20)).await.unwrap();

    let by_str = store.get::<Product>("SKU-1").await.unwrap();
    let sku = String::from("SKU-1");
    let by_ref = store.get::<Product>(&sku).await.unwrap();
    let by_value = store.get::<Product>(sku.clone()).await.unwrap();
    assert_eq!(by_str, Some(product("SKU-1", 10)));
    assert_eq!(by_ref, by_str);
    assert_eq!(by_value, by_str);
    assert!(store.exists::<Product>("SKU-2").await.unwrap());
    assert!(!store.exists::<Product>("SKU-9").await.unwrap());

    let many = store
        .get_many::<Product>(["SKU-2", "SKU-9", "SKU-1"])
        .await
        .unwrap();
    assert_eq!(
        many,
        vec![Some(product("SKU-2", 20)), None, Some(product("SKU-1", 10))]
    );
    let owned = vec![sku.clone()];
    assert_eq!(store.get_many::<Product>(&owned).await.unwrap().len(), 1);

    store
        .update::<Product>("SKU-2")
        .set(Product::PRICE, 25u32)
        .exec()
        .await
        .unwrap();
    assert_eq!(
        store.get::<Product>("SKU-2").await.unwrap().unwrap().price,
        25
    );

    assert!(store
        .relation(&BUNDLED_WITH)
        .relate("SKU-1", "SKU-2")
        .await
        .unwrap());
    assert!(store
        .relation(&BUNDLED_WITH)
        .is_related("SKU-1", &"SKU-2".to_string())
        .await
        .unwrap());
    assert_eq!(
        store
            .relation(&BUNDLED_WITH)
            .related_back("SKU-2")
            .await
            .unwrap(),
        vec!["SKU-1".to_string()]
    );

    assert!(store.delete::<Product>("SKU-1").await.unwrap());
    assert_eq!(store.get::<Product>("SKU-1").await.unwrap(), None);
    assert_eq!(
        store
            .relation(&BUNDLED_WITH)
            .related_back("SKU-2")
            .await
            .unwrap(),
        Vec::<String>::new(),
        "the delete by &str cleaned the relation like any delete"
    );
}

#[tokio::test]
async fn composite_pks_are_accepted_as_tuples_of_borrowed_parts() {
    let server = Target::start();
    let store = server.store().await;
    let s = Shipment {
        region: "EU".into(),
        id: 7,
        weight: 3,
    };
    store.save(&s).await.unwrap();
    let key = store.keys().of::<Shipment>(("EU", 7)).base;
    assert_eq!(server.keys(), vec![key.clone()]);
    if !server.is_cluster() {
        assert_eq!(server.keys(), vec!["shipment:EU_7".to_string()]);
    } else {
        assert_eq!(key, "shipment:{EU_7}");
    }

    assert_eq!(
        store.get::<Shipment>(("EU", 7)).await.unwrap(),
        Some(s.clone())
    );
    let region = "EU".to_string();
    assert_eq!(
        store.get::<Shipment>((&region, &7)).await.unwrap(),
        Some(s.clone())
    );
    assert_eq!(
        store.get::<Shipment>(&("EU".to_string(), 7)).await.unwrap(),
        Some(s.clone())
    );
    assert_eq!(store.get::<Shipment>(("EU", 8)).await.unwrap(), None);
    assert_eq!(
        store
            .get_many::<Shipment>([("EU", 7), ("US", 7)])
            .await
            .unwrap(),
        vec![Some(s), None]
    );
    assert!(store.delete::<Shipment>(("EU", 7)).await.unwrap());
    assert!(server.keys().is_empty());
}

#[test]
fn the_blocking_store_takes_the_same_forms() {
    let server = Target::start();
    blocking_forms(
        &redis_entity::blocking::Store::builder()
            .connect_any(&server.url())
            .unwrap(),
    );
}

fn blocking_forms<C: redis::aio::ConnectionLike + Clone + Send + Sync>(
    store: &redis_entity::blocking::Store<C>,
) {
    store.save(&product("SKU-3", 30)).unwrap();
    assert_eq!(
        store.get::<Product>("SKU-3").unwrap(),
        Some(product("SKU-3", 30))
    );
    assert_eq!(
        store.get_many::<Product>(["SKU-3"]).unwrap(),
        vec![Some(product("SKU-3", 30))]
    );
    assert!(store.delete::<Product>("SKU-3").unwrap());
}
