// Splits each sentence into words, as storm-starter's split-sentence bolt does.
"use strict";
const { runBolt } = require("./multilang");

runBolt((tuple, emit) => {
  for (const word of tuple.tuple[0].split(" ")) {
    if (word) emit([word]);
  }
});
