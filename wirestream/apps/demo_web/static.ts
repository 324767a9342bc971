/**
 * The static chart's script (`make demo` writes it into out/demo/<source>/windows.html):
 * draws the windows embedded in the page as JSON (`<script id="windows">`).
 */

import { drawChart, type ChartWindow } from "./chart.js";

const data = document.getElementById("windows")?.textContent ?? "[]";
drawChart(document.getElementById("panels")!, JSON.parse(data) as ChartWindow[]);
