//! Files: versioned character files, atomic writes, the bake cache.
