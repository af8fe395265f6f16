//! TCP NewReno and DCTCP (sans-IO). To be written.
