package lessons_test

// The scenario tests play on the pure rules too: their back-end lives in
// its own package, which registers itself, so that the lab binary does not
// link it. Importing it here registers it for every test in this binary.
import _ "tidemark/lessons/rulesplay"
