//! NDP (sans-IO). To be written.
