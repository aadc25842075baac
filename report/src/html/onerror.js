// Installed before any other script: an error in a later script is
// written into the page, where a reader and a headless browser's
// --dump-dom both see it.
window.onerror = function (message, source, line, column) {
  var box = document.getElementById('script-errors');
  if (!box) {
    box = document.createElement('pre');
    box.id = 'script-errors';
    (document.body || document.documentElement).appendChild(box);
  }
  box.textContent += 'script error: ' + message + ' (line ' + line + ':' + column + ')\n';
  return false;
};
