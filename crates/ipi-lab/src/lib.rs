//! The network-namespace lab: throwaway hosts on a private bridge for network tests.
