//! Scenarios shared by the cross-program tests and the lab demo.
