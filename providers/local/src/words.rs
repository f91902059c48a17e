//! The words of `random_pet`: adverbs, adjectives and animal names, short and plain enough
//! for resource names (lower-case ASCII letters only).

pub(crate) const ADVERBS: &[&str] = &[
    "amply", "aptly", "boldly", "briefly", "brightly", "calmly", "cleanly", "closely", "deeply",
    "deftly", "duly", "eagerly", "easily", "evenly", "fairly", "finely", "firmly", "freely",
    "fully", "gladly", "gently", "greatly", "happily", "highly", "humbly", "jointly", "keenly",
    "kindly", "largely", "lightly", "loosely", "loudly", "mainly", "merely", "mildly", "neatly",
    "newly", "nicely", "openly", "partly", "plainly", "politely", "purely", "quickly", "quietly",
    "rarely", "really", "rightly", "safely", "sharply", "simply", "slowly", "smoothly", "softly",
    "solely", "surely", "swiftly", "tightly", "truly", "vastly", "warmly", "wholly", "widely",
    "wisely",
];

pub(crate) const ADJECTIVES: &[&str] = &[
    "able", "adept", "agile", "alert", "amber", "ample", "apt", "awake", "bold", "brave", "bright",
    "brisk", "calm", "candid", "civil", "clean", "clear", "clever", "cosmic", "crisp", "curious",
    "daring", "deep", "eager", "easy", "elegant", "epic", "exact", "fair", "fast", "fine", "firm",
    "fluent", "fond", "free", "fresh", "gentle", "glad", "golden", "grand", "happy", "hardy",
    "honest", "humble", "ideal", "jolly", "just", "keen", "kind", "lively", "loyal", "lucid",
    "lucky", "mellow", "merry", "mighty", "modest", "neat", "nimble", "noble", "open", "patient",
    "placid", "polite", "proud", "quick", "quiet", "rapid", "ready", "robust", "rosy", "sharp",
    "shiny", "silent", "simple", "sincere", "smart", "smooth", "solid", "steady", "sturdy",
    "sunny", "swift", "tender", "tidy", "true", "upbeat", "valid", "vivid", "warm", "wise",
    "witty", "young", "zesty",
];

pub(crate) const NAMES: &[&str] = &[
    "alpaca", "ant", "antelope", "badger", "bat", "bear", "beaver", "bison", "boar", "bobcat",
    "buffalo", "bull", "camel", "caribou", "cat", "cheetah", "chipmunk", "cobra", "cougar", "cow",
    "coyote", "crab", "crane", "crow", "deer", "dingo", "dog", "dolphin", "donkey", "dove", "duck",
    "eagle", "eel", "elk", "emu", "falcon", "ferret", "finch", "fish", "fox", "frog", "gazelle",
    "gecko", "gibbon", "giraffe", "goat", "goose", "gopher", "gorilla", "hare", "hawk", "hedgehog",
    "heron", "hippo", "horse", "hound", "hyena", "ibex", "iguana", "impala", "jackal", "jaguar",
    "kangaroo", "kid", "kite", "koala", "lamb", "lark", "lemur", "leopard", "lion", "lizard",
    "llama", "lobster", "lynx", "macaw", "mako", "mammoth", "mantis", "marmot", "marten", "mink",
    "mole", "mongoose", "moose", "mouse", "mule", "newt", "ocelot", "octopus", "orca", "oriole",
    "osprey", "otter", "owl", "ox", "panda", "panther", "parrot", "pelican", "penguin", "pheasant",
    "pig", "pigeon", "pony", "poodle", "porpoise", "puma", "quail", "rabbit", "raccoon", "ram",
    "raven", "reindeer", "rhino", "robin", "salmon", "seal", "shark", "sheep", "shrew", "skunk",
    "sloth", "snail", "snake", "sparrow", "squid", "squirrel", "starling", "stork", "swan",
    "tapir", "termite", "tiger", "toad", "trout", "turkey", "turtle", "viper", "vulture", "walrus",
    "wasp", "weasel", "whale", "wolf", "wombat", "wren", "yak", "zebra",
];
