//! Atomic checkpoint files through `Fs`. Being written.
