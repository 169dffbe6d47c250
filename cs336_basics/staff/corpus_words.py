"""The prompt's ingredients, as in TinyStories (Eldan & Li 2023, section 2): words a 3-4 year-old
child knows, split into verbs, nouns and adjectives (one of each is drawn for every story), and
story features (one is drawn). Fixed lists: the corpus is a function of them and the seed."""

VERBS = (
    "ask", "bake", "bark", "bounce", "build", "carry", "catch", "chase", "clap", "clean", "climb",
    "close", "collect", "cook", "count", "cry", "dance", "dig", "draw", "dream", "drink", "drop",
    "eat", "explore", "fall", "feed", "find", "fix", "float", "fly", "fold", "follow", "give",
    "grow", "guess", "help", "hide", "hold", "hop", "hug", "jump", "kick", "kiss", "knock", "laugh",
    "learn", "lift", "listen", "look", "lose", "make", "march", "mix", "move", "nap", "open",
    "paint", "pick", "plant", "play", "pour", "pull", "push", "race", "rain", "reach", "read",
    "rest", "ride", "roll", "run", "sail", "save", "scream", "search", "see", "share", "shine",
    "shout", "sing", "sit", "skip", "sleep", "slide", "smell", "smile", "sneeze", "splash", "spin",
    "stack", "stand", "stop", "swim", "swing", "talk", "taste", "teach", "throw", "tickle", "touch",
    "travel", "trust", "try", "visit", "wait", "walk", "wash", "watch", "wave", "whisper", "win",
    "wish", "wonder", "wrap", "write", "yell",
)  # fmt: skip

NOUNS = (
    "apple", "ball", "balloon", "banana", "basket", "bath", "bear", "bed", "bee", "bell", "bench",
    "bike", "bird", "blanket", "boat", "book", "bottle", "box", "bread", "bridge", "brother",
    "bubble", "bucket", "bug", "bunny", "butterfly", "button", "cake", "candle", "car", "carrot",
    "castle", "cat", "chair", "cloud", "coat", "cookie", "cow", "crayon", "cup", "dinosaur", "dog",
    "doll", "door", "dragon", "drum", "duck", "egg", "elephant", "farm", "feather", "fish", "flag",
    "flower", "forest", "fox", "friend", "frog", "garden", "gift", "giraffe", "grandma", "grass",
    "hat", "hill", "horse", "house", "ice cream", "jar", "key", "kite", "lamp", "leaf", "lemon",
    "lion", "map", "milk", "mitten", "monkey", "moon", "mouse", "mud", "nest", "owl", "park",
    "pencil", "pie", "pig", "pillow", "pond", "puppy", "puzzle", "queen", "rabbit", "rain",
    "rainbow", "river", "robot", "rock", "rocket", "rope", "sand", "school", "sea", "seed", "sheep",
    "shell", "shoe", "sister", "snail", "snow", "sock", "soup", "spoon", "star", "stick", "stone",
    "sun", "swing", "teacher", "teddy", "tent", "toy", "train", "tree", "truck", "turtle",
    "umbrella", "wagon", "water", "whale", "wind", "window", "wolf", "worm",
)  # fmt: skip

ADJECTIVES = (
    "angry", "big", "bright", "brave", "busy", "calm", "careful", "cheerful", "clean", "clever",
    "cold", "colorful", "curious", "dark", "dirty", "dry", "easy", "empty", "fast", "fluffy",
    "friendly", "funny", "gentle", "giant", "glad", "golden", "good", "green", "grumpy", "happy",
    "hard", "heavy", "helpful", "hot", "hungry", "kind", "lazy", "little", "lonely", "long", "loud",
    "lucky", "magic", "messy", "new", "nice", "noisy", "old", "pink", "polite", "pretty", "proud",
    "purple", "quiet", "red", "round", "sad", "scared", "shiny", "short", "shy", "silly", "sleepy",
    "slow", "small", "smart", "soft", "sparkly", "special", "sticky", "strong", "sunny", "sweet",
    "tall", "tiny", "tired", "warm", "wet", "wild", "wise", "yellow",
)  # fmt: skip

# TinyStories' features (Eldan & Li 2023, section 2): each prompt asks for one of them.
FEATURES = (
    "the story should contain at least one dialogue",
    "the story has a happy ending",
    "the story has a moral value",
    "something unexpected happens in the story (a plot twist)",
    "the story has a conflict that the characters solve",
    "the story teaches something about friendship",
)
