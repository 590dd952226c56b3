//! Topic and broker log configuration with Kafka's key names and defaults. Being written.
