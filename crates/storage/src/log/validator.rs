//! Leader-side validation and offset assignment (Kafka's `LogValidator`). Being written.
