// Evaluated in the demo's chart page (test_demo_chart.py, via browser.js --evaluate):
// what the page drew, per symbol panel, read back from the SVG in the DOM.
(() => {
  const panels = [...document.querySelectorAll("svg[data-symbol]")].map((svg) => {
    const vwap = svg.querySelector("polyline.vwap");
    const band = svg.querySelector("polygon.band");
    const box = vwap.getBBox();
    return {
      symbol: svg.dataset.symbol,
      vwapPoints: vwap.points.numberOfItems,
      bandPoints: band.points.numberOfItems,
      volumeBars: svg.querySelectorAll("rect.volume").length,
      vwapBox: [box.width, box.height],
      bandArea: band.getBBox().width * band.getBBox().height,
      // Every VWAP point lies inside the band at its x: low <= VWAP <= high, drawn.
      vwapInsideBand: [...Array(vwap.points.numberOfItems).keys()].every((i) => {
        const p = vwap.points.getItem(i);
        const n = band.points.numberOfItems;
        const upper = band.points.getItem(i);
        const lower = band.points.getItem(n - 1 - i);
        return upper.x === p.x && lower.x === p.x && upper.y <= p.y + 1e-6 && p.y <= lower.y + 1e-6;
      }),
    };
  });
  const external = [...document.querySelectorAll("[src], link[href]")]
    .map((node) => node.getAttribute("src") ?? node.getAttribute("href"))
    .filter((url) => !url.startsWith("data:"));
  return { drawn: document.documentElement.dataset.drawn ?? null, panels, external };
})()
