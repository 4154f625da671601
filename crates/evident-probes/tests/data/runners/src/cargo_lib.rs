#[cfg(test)]
mod tests {
    #[test]
    fn ok_passed() {
        println!("test result: ok. 99 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s");
    }

    #[test]
    fn fails() {
        assert_eq!(1, 2);
    }

    #[test]
    #[ignore]
    fn ignored() {}
}
